#!/usr/bin/env bash
# Instructions per body per right-hand side on paper 000's spherical chain, counted by valgrind's
# callgrind (Debian's valgrind; no hardware counters needed, so it works in VMs). For each engine
# and size it counts two runs of `treedyn_bench_simbody --evaluate ENGINE N COUNT` that differ
# only in COUNT and divides the difference by the extra evaluations and N: set-up cancels.
#
#   bench/instructions_per_body.sh [BUILD_DIR] [ENGINES] [SIZES]
#   bench/instructions_per_body.sh build "dca hdca simbody" "16 128 1024"
set -euo pipefail
build=${1:-build}
engines=${2:-dca hdca simbody}
sizes=${3:-16 128 1024}
bench="$build/bench/treedyn_bench_simbody"
command -v valgrind >/dev/null || { echo "instructions_per_body: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
[ -x "$bench" ] || { echo "instructions_per_body: $bench not built (needs libsimbody-dev)" >&2; exit 1; }

# Instructions executed by one command under callgrind (its "Collected" total).
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

printf '%-8s %6s %14s\n' engine bodies 'instr/body/RHS'
for n in $sizes; do
  # Enough evaluations that the difference dwarfs callgrind's own noise (about 1e5 instructions).
  few=$(( 20000 / n + 2 )); many=$(( few * 3 ))
  for e in $engines; do
    a=$(count "$bench" --evaluate "$e" "$n" "$few")
    b=$(count "$bench" --evaluate "$e" "$n" "$many")
    printf '%-8s %6d %14.0f\n' "$e" "$n" "$(echo "($b - $a) / (($many - $few) * $n)" | bc -l)"
  done
done
