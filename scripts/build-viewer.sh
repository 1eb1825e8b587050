#!/usr/bin/env bash
# Bundles the viewer (viewer/src/viewer.js with three.js and uPlot, versions pinned by
# viewer/package-lock.json, from npm) into one script and its stylesheet, which `treedyn view`
# embeds in viewer.html:
#   scripts/build-viewer.sh OUTPUT_DIR      -> OUTPUT_DIR/viewer.bundle.js, viewer.bundle.css
# Installs the npm packages (npm ci) only when the lock file changed since the last install.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$1
mkdir -p "$out"
command -v npm >/dev/null || { echo "build-viewer: npm is needed to build the viewer (Debian: apt-get install npm)" >&2; exit 1; }
cd "$root/viewer"
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.treedyn-lock; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.treedyn-lock
fi
node_modules/.bin/esbuild src/viewer.js --bundle --format=iife --minify --target=es2020 --log-level=warning \
  --outfile="$out/viewer.bundle.js"
