#!/usr/bin/env bash
# ali3 on ladders of N coupled four-bar loops: set-up and wall time per step, one thread pinned
# to CPU 0, two runs each (docs/benchmarks.md "Ladders").
# Usage: bench/ladder_scaling.sh [build dir] [N ...]    (default: build 40 400 1000 2000 4000)
set -euo pipefail
build=${1:-build}
shift || true
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(40 400 1000 2000 4000)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for n in "${sizes[@]}"; do
  "$build/treedyn" generate ladder -n "$n" -o "$work/ladder$n.json" >/dev/null
  for run in 1 2; do
    taskset -c 0 "$build/treedyn" simulate "$work/ladder$n.json" -f ali3 --t-end 0.2 --sample-every 1000 \
      --no-estimate-error -q -o "$work/out$n" 2>/dev/null
    python3 - "$n" "$work/out$n/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[2]))
print(f"N = {sys.argv[1]:>5}: set-up {s['setup_seconds']:.3f} s, per step {1e3 * s['wall_seconds'] / s['steps']:.2f} ms, {s['status']}")
PY
  done
done
