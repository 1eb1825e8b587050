#!/usr/bin/env bash
# Two threads against one on paper 000's 1024-body spherical chain, 5 s: ali3 and hdca on one
# thread, two fixed threads and two timed ones (the default), each process pinned to CPUs 0 and 1,
# with what the governor's trials found (docs/benchmarks.md "Two threads on an idle machine").
# Usage: bench/two_threads.sh [build dir] [rounds]    (default: build 2)
# TREEDYN_RUN: a command prefix, such as a dynamic loader with --library-path for a build carried
# to another machine.
set -euo pipefail
build=${1:-build}
rounds=${2:-2}
run=(${TREEDYN_RUN:-} "$build/treedyn")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${run[@]}" generate chain -n 1024 --joint spherical -o "$work/c1024.json" >/dev/null 2>&1
for round in $(seq "$rounds"); do
  for f in ali3 hdca; do
    for mode in one fixed timed; do
      case $mode in
        one) args=(--threads 1) ;;
        fixed) args=(--threads 2 --fixed-threads) ;;
        timed) args=(--threads 2) ;;
      esac
      rm -rf "$work/out"
      taskset -c 0,1 "${run[@]}" simulate "$work/c1024.json" -f "$f" --t-end 5 --no-estimate-error -q \
        -o "$work/out" "${args[@]}" 2>/dev/null || true
      python3 - "$round" "$f" "$mode" "$work/out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[4]))
d = s.get("diagnostics", {})
trials = ""
if "thread_trials" in d:
    trials = (f", {d['thread_trials']:.0f} trials ({d['thread_trials_one_thread_faster']:.0f} to one thread), a call "
              f"{1e6 * d['call_seconds_on_threads']:.0f} us on two threads, {1e6 * d['call_seconds_on_one_thread']:.0f} us on one")
print(f"round {sys.argv[1]} {sys.argv[2]:>4} {sys.argv[3]:>5}: {s['wall_seconds']:.3f} s of stepping, {s['status']}{trials}")
PY
    done
  done
done
