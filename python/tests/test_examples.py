"""The Python examples run as a user runs them, and print what they say."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(script, *args, cwd):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / script), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_pd_example_reaches_the_static_equilibrium(tmp_path):
    out = run("pendulum_pd.py", cwd=tmp_path)
    difference = float(re.search(r"difference ([0-9.e+-]+) rad", out).group(1))
    assert difference < 1e-6


def test_the_four_bar_example_tabulates_and_draws_every_formulation(tmp_path):
    out = run("four_bar_formulations.py", str(tmp_path / "figure.png"), cwd=tmp_path)
    for name in ("reference", "dca", "hdca", "ali3", "half-implicit", "fully-implicit"):
        assert re.search(rf"^{name}\s+ok", out, re.M), name
    figure = tmp_path / "figure.png"
    assert figure.stat().st_size > 10_000
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
