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
    for name in ("reference", "dca", "hdca", "ali3"):
        assert re.search(rf"^{name}\s+ok", out, re.M), name
    # half-implicit passes the aligned position at 0.97 s, but its refined companion (half the
    # step) cannot: its answer there is not settled, and it says so (issue 24)
    assert re.search(r"^half-implicit\s+warning", out, re.M), out
    # Backward Euler's numerical damping drains the four-bar's energy at paper 002's step: the run
    # judges itself (issue 24) instead of saying ok 1.7 m from the reference.
    assert re.search(r"^fully-implicit\s+warning", out, re.M), out
    figure = tmp_path / "figure.png"
    assert figure.stat().st_size > 10_000
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_sweep_example_maps_the_crank_speed_over_the_masses(tmp_path):
    out = run("four_bar_sweep.py", str(tmp_path / "sweep.png"), "3", cwd=tmp_path)
    assert "9 samples: 9 ok" in out
    table = (tmp_path / "results" / "four_bar_sweep" / "sweep.csv").read_text().splitlines()
    assert len(table) == 10 and table[0].endswith(",qd:joint1.angle")
    figure = tmp_path / "sweep.png"
    assert figure.stat().st_size > 10_000 and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
