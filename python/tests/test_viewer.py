"""The viewer (treedyn view, simulate --view) in a real browser: headless Chromium opens
viewer.html from disk and the tests read the scene it draws through the page's window.treedyn.

The positions the scene holds are checked against trajectory.csv, written independently by the
command line's ResultWriter (the page stores float32: 1e-6 m is 10 times float32's resolution at
the four-bar's 1 m scale)."""

import csv
import os
import subprocess

import numpy as np
import pytest

from browser import Browser  # without chromium (scripts/install-deps.sh installs it) these tests fail, never skip


@pytest.fixture(scope="module")
def chromium():
    b = Browser()
    yield b
    b.close()


def run(*args, ok=True):
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=600)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def four_bar_run(tmp_path_factory, treedyn_binary, models_dir):
    out = tmp_path_factory.mktemp("four_bar") / "ali3"
    run(treedyn_binary, "simulate", str(models_dir / "four_bar.json"), "-f", "ali3", "--t-end", "2", "-o", str(out), "-q",
        "--view")
    return out


def trajectory(folder):
    with open(folder / "trajectory.csv") as f:
        rows = list(csv.reader(f))
    return rows[0], np.array(rows[1:], dtype=float)


def not_background_share(png):
    import matplotlib.image

    pixels = matplotlib.image.imread(str(png))[:, :, :3]
    background = np.array([0xF4, 0xF5, 0xF7]) / 255.0
    return float(np.mean(np.abs(pixels - background).sum(axis=2) > 0.05))


def test_the_page_opens_from_disk_and_draws_each_body_where_the_trajectory_puts_it(chromium, four_bar_run, tmp_path):
    page = four_bar_run / "viewer.html"
    assert page.exists() and page.stat().st_size < 5e6
    chromium.errors.clear()
    chromium.open(page)
    assert chromium.errors == [], chromium.errors
    assert chromium.evaluate("treedyn.bodyCount()") == 3  # the four-bar's three moving links
    header, rows = trajectory(four_bar_run)
    times = chromium.evaluate("treedyn.frameTimes()")
    assert len(times) == len(rows)  # a small run keeps every sample
    for k in (0, 57, len(rows) - 1):
        chromium.evaluate(f"treedyn.seek({times[k]!r})")
        scene = np.array(chromium.evaluate("treedyn.bodyPositions()"))
        expected = rows[k, 1:].reshape(3, 13)[:, :3]
        assert rows[k, 0] == pytest.approx(times[k], abs=1e-12)
        np.testing.assert_allclose(scene, expected, atol=1e-6, rtol=0)
    # between two samples the scene interpolates: each body between its two sampled positions
    chromium.evaluate(f"treedyn.seek({(times[10] + times[11]) / 2!r})")
    mid = np.array(chromium.evaluate("treedyn.bodyPositions()"))
    a, b = rows[10, 1:].reshape(3, 13)[:, :3], rows[11, 1:].reshape(3, 13)[:, :3]
    np.testing.assert_allclose(mid, (a + b) / 2, atol=1e-6)

    shot = chromium.screenshot(tmp_path / "four_bar.png")
    assert not_background_share(shot) > 0.05, "the screenshot is (nearly) blank"
    plots = {p["title"]: p for p in chromium.evaluate("treedyn.plots()")}
    assert {"energy", "energy drift", "constraint errors", "joint coordinate"} <= set(plots)
    for p in plots.values():  # each curve holds the run's samples
        for s in p["series"]:
            assert s["points"] == len(rows) and s["finite"] > 0.9 * len(rows), (p["title"], s)
    assert chromium.errors == [], chromium.errors


def test_a_browser_without_webgl_is_told_so_and_still_gets_the_plots(four_bar_run, tmp_path):
    """With WebGL turned off (--disable-3d-apis) three.js cannot draw: the page says so in the
    view, with advice, instead of staying blank, and the plots and the time slider still work."""
    b = Browser(extra_args=("--disable-3d-apis",))
    try:
        b.open(four_bar_run / "viewer.html")
        assert b.evaluate("treedyn.webgl") is False
        note = b.evaluate("document.getElementById('no-webgl') && document.getElementById('no-webgl').textContent")
        assert note and "could not start WebGL" in note and "turn on WebGL" in note, note
        assert b.evaluate("document.querySelector('#view canvas') === null")
        plots = b.evaluate("treedyn.plots()")
        assert plots and all(s["points"] > 0 for p in plots for s in p["series"]), plots
        b.evaluate("treedyn.seek(1.0)")
        assert abs(b.evaluate("treedyn.time()") - 1.0) < 1e-9
        # three.js logs why it failed; nothing else may go wrong
        assert all("WebGL" in e for e in b.errors), b.errors
        png = b.screenshot(tmp_path / "no_webgl.png")
        assert os.path.getsize(png) > 0
    finally:
        b.close()


def test_compare_mode_overlays_every_formulation_and_toggles_them(chromium, tmp_path, treedyn_binary, models_dir):
    out = tmp_path / "compare"
    run(treedyn_binary, "compare", str(models_dir / "four_bar.json"), "--formulations", "reference,dca,ali3", "--t-end",
        "1", "-o", str(out), "-q")
    done = run(treedyn_binary, "view", str(out))
    assert "viewer.html" in done.stdout
    chromium.errors.clear()
    chromium.open(out / "viewer.html")
    runs = chromium.evaluate("treedyn.runs()")
    assert [r["name"] for r in runs] == ["reference", "dca", "ali3"]
    assert chromium.evaluate("treedyn.visibleBodies()") == [3, 3, 3]
    chromium.evaluate("treedyn.setVisible(1, false)")
    assert chromium.evaluate("treedyn.visibleBodies()") == [3, 0, 3]
    chromium.evaluate("treedyn.setVisible(1, true)")
    deviation = next(p for p in chromium.evaluate("treedyn.plots()") if p["title"].startswith("deviation"))
    assert [s["label"] for s in deviation["series"]] == ["reference", "dca", "ali3"]
    # each run drawn where its own trajectory puts it
    for k, name in enumerate(["reference", "dca", "ali3"]):
        _, rows = trajectory(out / name)
        t = chromium.evaluate(f"treedyn.frameTimes({k})")[-1]
        chromium.evaluate(f"treedyn.seek({t!r})")
        np.testing.assert_allclose(chromium.evaluate(f"treedyn.bodyPositions({k})"), rows[-1, 1:].reshape(3, 13)[:, :3],
                                   atol=1e-6)
    assert not_background_share(chromium.screenshot(tmp_path / "compare.png")) > 0.05
    assert chromium.errors == [], chromium.errors


def test_a_failed_run_says_so_and_marks_its_time(chromium, tmp_path, treedyn_binary, models_dir):
    out = tmp_path / "failed"
    # half-implicit's Newton iteration fails at the four-bar's aligned (singular) position, t = 7.11 s
    done = run(treedyn_binary, "simulate", str(models_dir / "four_bar.json"), "-f", "half-implicit", "--t-end", "8",
               "--no-estimate-error", "-o", str(out), "-q", "--view", ok=False)
    assert done.returncode == 2
    chromium.errors.clear()
    chromium.open(out / "viewer.html")
    banner = chromium.evaluate("document.getElementById('status').textContent")
    assert "half-implicit: failed at t = 7.11" in banner and "Newton iteration did not converge" in banner
    assert chromium.errors == [], chromium.errors


def test_bad_input_is_a_clear_message_and_a_mismatched_model_still_shows_the_run(chromium, tmp_path, treedyn_binary,
                                                                                 models_dir, four_bar_run):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run(treedyn_binary, "view", str(empty), ok=False)
    assert done.returncode == 1 and "nothing to view: no trajectory.csv" in done.stderr and str(empty) in done.stderr
    # A trajectory of another model than the one given: the page says so and draws the run's bodies.
    done = run(treedyn_binary, "view", str(four_bar_run), "--model", str(models_dir / "slider_crank.json"), "-o",
               str(tmp_path / "mismatch.html"))
    chromium.errors.clear()
    chromium.open(tmp_path / "mismatch.html")
    notes = chromium.evaluate("document.getElementById('notes').textContent")
    assert "are not the model's" in notes
    assert chromium.evaluate("treedyn.bodyCount()") == 3
    assert chromium.errors == [], chromium.errors
    # A model that cannot be read (an unknown shape type in model.json): the message, and the run as frames.
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in ("trajectory.csv", "metrics.csv", "joints.csv", "summary.json"):
        (broken / f).write_bytes((four_bar_run / f).read_bytes())
    text = (four_bar_run / "model.json").read_text()
    assert '"type": "box"' in text  # the links' shapes
    (broken / "model.json").write_text(text.replace('"type": "box"', '"type": "torus"', 1))
    run(treedyn_binary, "view", str(broken))
    chromium.errors.clear()
    chromium.open(broken / "viewer.html")
    notes = chromium.evaluate("document.getElementById('notes').textContent")
    assert "the model could not be read" in notes and "torus" in notes
    assert chromium.evaluate("treedyn.bodyCount()") == 3
    assert chromium.errors == [], chromium.errors
    done = run(treedyn_binary, "view", str(tmp_path / "nowhere"), ok=False)
    assert done.returncode == 1 and "nowhere: no such folder" in done.stderr


def test_a_big_run_is_thinned_to_its_size_budget_and_still_exact_at_the_frames_it_keeps(chromium, tmp_path, treedyn_binary):
    """A 256-body chain for 2 s at dt 1e-3 (2001 samples) under a 2 MB budget."""
    model = tmp_path / "chain.json"
    run(treedyn_binary, "generate", "chain", "--bodies", "256", "-o", str(model))
    out = tmp_path / "chain"
    run(treedyn_binary, "simulate", str(model), "-f", "dca", "--integrator", "rk4", "--t-end", "2", "--dt", "1e-3", "-o",
        str(out), "-q", "--max-output-mb", "0")
    run(treedyn_binary, "view", str(out), "--max-mb", "2")
    page = out / "viewer.html"
    assert page.stat().st_size <= 2e6
    _, rows = trajectory(out)
    assert len(rows) == 2001
    chromium.errors.clear()
    chromium.open(page)
    assert chromium.evaluate("treedyn.bodyCount()") == 256
    times = chromium.evaluate("treedyn.frameTimes()")
    assert 2 < len(times) < 2001 and times[-1] == rows[-1, 0]  # thinned, the last sample kept
    assert "samples kept" in chromium.evaluate("document.getElementById('notes').textContent")
    k = int(np.argmin(np.abs(rows[:, 0] - times[len(times) // 2])))
    chromium.evaluate(f"treedyn.seek({rows[k, 0]!r})")
    scale = np.abs(rows[k, 1:].reshape(256, 13)[:, :3]).max()  # float32: 6e-8 of the coordinates' size
    np.testing.assert_allclose(chromium.evaluate("treedyn.bodyPositions()"), rows[k, 1:].reshape(256, 13)[:, :3],
                               atol=1e-6 * max(1.0, scale))
    assert chromium.errors == [], chromium.errors


def test_a_runs_warnings_are_noted_once_each_with_its_name_once(four_bar_run):
    """ali3 on the four-bar (a planar loop of revolute joints in space: 3 redundant equations)
    warns that its initial multipliers are minimum-norm; the page's notes carry the warning, the
    run's name once, not "ali3: warning: ali3: ..."."""
    from treedyn.viewer import viewer_data
    import json
    with open(four_bar_run / "summary.json") as f:
        warnings = json.load(f)["warnings"]
    assert any(w.startswith("ali3: ") for w in warnings), warnings
    notes = viewer_data(str(four_bar_run))["notes"]
    for w in warnings:
        assert f"ali3: warning: {w.removeprefix('ali3: ')}" in notes, notes
    assert not any("ali3: warning: ali3:" in n for n in notes), notes
