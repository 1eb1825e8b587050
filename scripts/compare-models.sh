#!/bin/sh
# Runs `treedyn compare` on the papers' models and keeps each comparison's tables in
# docs/results/compare/<model>.{md,csv} (the per-formulation trajectories stay in $WORK).
# Usage: scripts/compare-models.sh [build dir]   (about a minute on a 2-core machine)
set -eu
BUILD=${1:-build}
WORK=${WORK:-results/compare-models}
OUT=docs/results/compare
mkdir -p "$OUT"
for model in spatial_double_pendulum four_bar slider_crank four_link hi_double_pendulum loop4 loop8 double_loop8 \
             planar_double_pendulum planar_four_bar chain128; do
  "$BUILD/treedyn" compare "models/$model.json" --quiet --output "$WORK/$model"
  cp "$WORK/$model/compare.md" "$OUT/$model.md"
  cp "$WORK/$model/compare.csv" "$OUT/$model.csv"
  echo "$model: $(grep -c '| ok |' "$OUT/$model.md") formulations ok"
done
