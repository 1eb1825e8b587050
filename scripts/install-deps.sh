#!/usr/bin/env bash
# Installs what treedyn needs to build and test, with apt-get, only when something is missing.
# Idempotent, and silent when everything is already there.
set -euo pipefail

packages=(
  cmake make g++
  libeigen3-dev          # linear algebra (fixed-size types in hot loops)
  libsundials-dev        # CVODE / ARKODE adaptive integrators
  libsuitesparse-dev     # SuiteSparseQR: the rank of large loop systems (topology)
  nlohmann-json3-dev     # model files
  libcli11-dev           # command-line parsing and --help
  libgtest-dev           # tests (GoogleTest + CTest)
  libbenchmark-dev       # Google Benchmark (bench/)
  gnuplot-nox            # `treedyn plot`, `simulate --plot`: SVG plots of a run
  pkgconf                # the examples test builds one example with pkg-config
  python3-dev pybind11-dev python3-numpy  # the Python package (python/)
  python3-pytest python3-matplotlib python3-setuptools  # its tests, plots, pip install .
  python3-distributed python3-tqdm  # treedyn sweep: Dask's scheduler runs the samples; tqdm's bar
  chromium python3-websocket  # the viewer's tests: headless Chromium driven over its DevTools protocol
  liburdfdom-dev libtinyxml-dev  # URDF import (urdfdom, and the TinyXML it parses with)
  libmujoco-dev libmujoco-samples  # MJCF import through MuJoCo's compiler; its sample models test it
  libsdformat-dev        # SDFormat import
  libsimbody-dev         # a peer engine: the test and the benchmark against Simbody
)

# npm bundles the viewer (three.js, uPlot: scripts/build-viewer.sh); a machine whose Node.js
# brings its own npm (NodeSource's) keeps it.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
