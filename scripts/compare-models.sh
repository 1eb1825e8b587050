#!/bin/sh
# Runs `treedyn compare` on the papers' models and keeps each comparison's tables in
# docs/results/compare/<model>.{md,csv} (the per-formulation trajectories stay in $WORK), then
# rewrites the summary table of docs/results/compare.md from them (scripts/compare-summary.awk).
# Usage: scripts/compare-models.sh [build dir]   (about a minute on a 2-core machine)
set -eu
BUILD=${1:-build}
WORK=${WORK:-results/compare-models}
OUT=docs/results/compare
mkdir -p "$OUT"
MODELS="spatial_double_pendulum four_bar slider_crank four_link hi_double_pendulum loop4 loop8 double_loop8
        planar_double_pendulum planar_four_bar chain128"
for model in $MODELS; do
  "$BUILD/treedyn" compare "models/$model.json" --quiet --output "$WORK/$model"
  cp "$WORK/$model/compare.md" "$OUT/$model.md"
  cp "$WORK/$model/compare.csv" "$OUT/$model.csv"
  echo "$model: $(grep -c '| ok |' "$OUT/$model.md") formulations ok"
done

# The summary table of docs/results/compare.md, one row per model, replaced between its markers.
SUMMARY=docs/results/compare.md
rows=$(cd docs/results && awk -f ../../scripts/compare-summary.awk $(for m in $MODELS; do echo "compare/$m.md"; done))
awk -v rows="$rows" '
  /^<!-- end of summary -->/ { print rows; skipping = 0 }
  skipping && !/^\|---/ && !/^\| model / { next }
  { print }
  /^<!-- summary: / { skipping = 1 }
' "$SUMMARY" > "$SUMMARY.new" && mv "$SUMMARY.new" "$SUMMARY"
