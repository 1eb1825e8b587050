#!/usr/bin/env bash
# Makes `import treedyn` work from any directory, with the package the build assembled in
# <build>/python (as `pip install -e` would): writes treedyn.pth into the site-packages of the
# interpreter it was built for (Debian's /usr/bin/python3, whose NumPy is python3-numpy) and of the
# python3 first on PATH when that is another interpreter of the same version (a pyenv one, say),
# which also gets Debian's dist-packages appended (for NumPy; its own packages come first).
#   scripts/install-python.sh <build>/python
set -euo pipefail
package_dir=$(cd "$1" && pwd)
[ -d "$package_dir/treedyn" ] || { echo "install-python: no treedyn package in $package_dir (build first)" >&2; exit 1; }
built_for=/usr/bin/python3
version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
site() { "$1" -c 'import sysconfig; print(sysconfig.get_path("purelib"))'; }
want=$(version "$built_for")
link() {  # interpreter, extra lines
  local py=$1 dir
  dir=$(site "$py")
  mkdir -p "$dir" 2>/dev/null || true
  if ! { printf '%s\n' "$package_dir"; if [ -n "${2:-}" ]; then printf '%s\n' "$2"; fi; } > "$dir/treedyn.pth" 2>/dev/null; then
    echo "install-python: cannot write $dir/treedyn.pth (run as root, or set PYTHONPATH=$package_dir)" >&2
    return 1
  fi
  echo "python: $py imports treedyn from $package_dir ($dir/treedyn.pth)"
}
link "$built_for"
on_path=$(command -v python3 || true)
if [ -n "$on_path" ] && [ "$(readlink -f "$on_path")" != "$(readlink -f "$built_for")" ]; then
  real=$("$on_path" -c 'import sys; print(sys.executable)')
  if [ "$(readlink -f "$real")" != "$(readlink -f "$built_for")" ]; then
    if [ "$(version "$on_path")" = "$want" ]; then
      link "$on_path" "$("$built_for" -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))')"
    else
      echo "python: $on_path is Python $(version "$on_path"); the treedyn module is built for $want: use $built_for"
    fi
  fi
fi
