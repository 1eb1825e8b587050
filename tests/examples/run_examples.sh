#!/usr/bin/env bash
# The examples as a user builds them: install treedyn from the build tree into a temporary
# prefix, build each example (its own CMake project, find_package(treedyn)) against it, run it
# and check what it prints; then build one example with pkg-config alone, and (where the CPU has
# AVX2) the first one again with -mavx2 -mfma against the same portable library: its headers must
# lay out and allocate Eigen members as the library does whatever the user's flags
# (src/CMakeLists.txt, TREEDYN_EIGEN_ABI).
#
#   run_examples.sh BUILD_DIR SOURCE_DIR CXX_COMPILER [EXTRA_CXX_FLAGS]
set -euo pipefail
build=$1 source=$2 cxx=$3 flags=${4:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/treedyn-examples.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "FAILED: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "install"; }
for f in include/treedyn/simulator.hpp include/treedyn/version.hpp lib/cmake/treedyn/treedynConfig.cmake \
         lib/cmake/treedyn/treedynConfigVersion.cmake lib/pkgconfig/treedyn.pc bin/treedyn; do
  [ -e "$prefix/$f" ] || fail "the install has no $f"
done
# The exported target carries include paths and libraries, never compile options.
if grep -Eq 'INTERFACE_COMPILE_OPTIONS|-O[0-3]|-march' "$prefix"/lib/cmake/treedyn/treedynTargets*.cmake; then
  fail "the exported target imposes compile options on its consumers"
fi
"$prefix/bin/treedyn" --version | grep -q '^treedyn [0-9]' || fail "the installed treedyn --version"
# SDFormat is read by a module installed beside libtreedyn and loaded on demand (src/CMakeLists.txt).
if [ -e "$build/src/libtreedyn_sdf.so" ]; then
  [ -e "$prefix/lib/libtreedyn_sdf.so" ] || fail "the install has no lib/libtreedyn_sdf.so"
  "$prefix/bin/treedyn" simulate "$source/tests/import/data/four_bar.sdf" --t-end 0.05 -q -o "$work/four_bar_sdf" ||
    fail "the installed treedyn could not run an SDFormat file"
  grep -q '"status": "ok"' "$work/four_bar_sdf/summary.json" || fail "the SDFormat run does not say ok"
fi

build_example() {  # name [build directory name] [more compiler flags]
  local dir=${2:-$1}
  cmake -S "$source/examples/$1" -B "$work/$dir" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
        -DCMAKE_CXX_FLAGS="$flags ${3:-}" > "$work/$dir.configure.log" 2>&1 || { cat "$work/$dir.configure.log"; fail "configure $dir"; }
  cmake --build "$work/$dir" > "$work/$dir.build.log" 2>&1 || { cat "$work/$dir.build.log"; fail "build $dir"; }
}
# value LABEL FIELD < output: the FIELD-th word after LABEL on the line that starts with it
value() { awk -v label="$1" -v field="$2" 'index($0, label) == 1 { sub(label, ""); split($0, w, " "); print w[field]; exit }'; }
check() {  # description, awk condition on x
  awk -v x="$2" "BEGIN { exit !($3) }" || fail "$1: $2"
}

# (a) the 3-D pendulum held by a PD controller: at the target to round-off, at rest.
check_pendulum() {  # executable
  out=$("$1") || fail "$1 exited with an error"
  echo "$out"
  check "$1: orientation error (rad)" "$(echo "$out" | value "orientation error from target:" 1)" "x < 1e-6"
  check "$1: angular speed (rad/s)" "$(echo "$out" | value "angular speed:" 1)" "x < 1e-6"
}
build_example pendulum_pd
check_pendulum "$work/pendulum_pd/pendulum_pd"

# (b) a model of models/ run to its end, results on disk.
build_example run_model
out=$("$work/run_model/run_model" "$source/models/four_bar.json" ali3 "$work/four_bar")
echo "$out"
echo "$out" | grep -q "status ok" || fail "run_model did not end ok"
for f in trajectory.csv metrics.csv summary.json; do [ -s "$work/four_bar/$f" ] || fail "run_model wrote no $f"; done
grep -q '"status": "ok"' "$work/four_bar/summary.json" || fail "summary.json does not say ok"

# (c) the crank-rocker under a speed controller: the speed near its target, and the reaction at
# the loop-closing joint the same under hdca as under the reference formulation (in-plane
# components: the out-of-plane ones are redundant, the formulations give minimum-norm ones).
build_example four_bar_speed
ref=$("$work/four_bar_speed/four_bar_speed" reference)
hdca=$("$work/four_bar_speed/four_bar_speed" hdca)
echo "$ref"; echo "$hdca"
speed=$(echo "$hdca" | value "crank speed:" 1)
check "four_bar_speed crank speed (rad/s) against 2 pi" "$speed" "x > 0.95 * 6.283185 && x < 1.05 * 6.283185"
[ "$(echo "$hdca" | value "loop-closing joint:" 1)" = rocker_pin ] || fail "four_bar_speed names no loop-closing joint"
for k in 1 2; do
  a=$(echo "$ref" | value "reaction force on its child:" "$k") b=$(echo "$hdca" | value "reaction force on its child:" "$k")
  check "reaction force component $k, reference $a N against hdca" "$b" "(x - $a) < 1e-4 && ($a - x) < 1e-4"
done

# pkg-config alone: compile and link the first example by hand.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
"$cxx" -std=c++20 $flags "$source/examples/pendulum_pd/main.cpp" -o "$work/pendulum_pkgconfig" \
  $(pkg-config --cflags --libs treedyn) -Wl,-rpath,"$prefix/lib" || fail "build with pkg-config"
"$work/pendulum_pkgconfig" | grep -q "orientation error from target" || fail "the pkg-config build does not run"

# The user's own instruction set: the same example built with AVX2 and FMA (as -march=native does
# on most machines today), by CMake and by pkg-config. Before the library fixed Eigen's alignment
# and allocator for its users, this build read the model's quaternions as NaN and stopped, and
# with the alignment alone it crashed freeing a vector the library had allocated.
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  build_example pendulum_pd pendulum_avx2 "-mavx2 -mfma"
  check_pendulum "$work/pendulum_avx2/pendulum_pd"
  # shellcheck disable=SC2046
  "$cxx" -std=c++20 $flags -mavx2 -mfma "$source/examples/pendulum_pd/main.cpp" -o "$work/pendulum_pkgconfig_avx2" \
    $(pkg-config --cflags --libs treedyn) -Wl,-rpath,"$prefix/lib" || fail "build with pkg-config and AVX2"
  check_pendulum "$work/pendulum_pkgconfig_avx2"
else
  echo "examples: this CPU has no AVX2 and FMA, so the build with -mavx2 -mfma was not run"
fi
echo "examples: all built against the installed package and checked"
