"""pip install --no-build-isolation .  — the treedyn Python package, built by CMake.

The extension is linked with a static libtreedyn (BUILD_SHARED_LIBS=OFF) so that the installed
package needs no library beside it; NumPy comes from Debian's python3-numpy (no dependency is
declared: pip would try to download it). See docs/python.md.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
VERSION = re.search(r"project\(treedyn VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = pathlib.Path(self.build_temp).resolve() / "cmake"
        subprocess.check_call([
            "cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF",
            "-DTREEDYN_BUILD_TESTS=OFF", "-DTREEDYN_BUILD_BENCH=OFF", f"-DPython_EXECUTABLE={sys.executable}",
        ])
        subprocess.check_call(["cmake", "--build", str(build), "--target", "treedyn_python", "-j", str(os.cpu_count() or 2)])
        module = next((build / "python" / "treedyn").glob("_treedyn*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(module, target)


setup(
    name="treedyn",
    version=VERSION,
    description="Dynamics of constrained multi-rigid-body systems by divide and conquer",
    packages=["treedyn"],
    package_dir={"": "python"},
    ext_modules=[CMakeExtension("treedyn._treedyn")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
    install_requires=["numpy"],
    extras_require={"plot": ["matplotlib"], "sweep": ["distributed", "tqdm"]},  # Debian: python3-distributed, python3-tqdm
)
