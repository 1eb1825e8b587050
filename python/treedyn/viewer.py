"""viewer.html: one self-contained page (no server, no network) that shows a run, or a comparison's
runs overlaid, in 3-D with three.js, with the run's time plots under a cursor that follows the
playing time. `treedyn view DIR` and `treedyn simulate ... --view` write it; so does

    import treedyn.viewer
    treedyn.viewer.write("results/four_bar/ali3")           # -> results/four_bar/ali3/viewer.html

The page's script (viewer/src/viewer.js with three.js and uPlot, bundled by
scripts/build-viewer.sh into viewer.bundle.js beside this file) and the data are embedded in the
page: poses as float32 (base64), times as float64, decimated to keep the file under max_mb. See
docs/viewer.md.
"""

from __future__ import annotations

import base64
import csv
import json
import math
import os
from typing import Any, Dict, List, Optional

import numpy as np

import treedyn

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT_POINTS = 4000  # per curve at most: more than a plot's width in pixels


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def _curve(x: np.ndarray, y: np.ndarray, log: bool = False) -> str:
    """A curve as float32 (base64); the page shows NaN (a missing value, or one not positive on a
    log scale) as a gap."""
    y = np.asarray(y, dtype=np.float32).copy()
    if log:
        y[~(y > 0)] = np.nan
    return _b64(y)


def _stride(count: int, limit: int) -> np.ndarray:
    """Indices of at most `limit` of `count` samples, evenly spread, the last always kept."""
    if count <= limit:
        return np.arange(count)
    idx = np.unique(np.linspace(0, count - 1, limit).round().astype(int))
    return idx


def _runs_of(results: str) -> List[tuple]:
    """(name, folder, why not) of each run: the folder itself, or the runs a compare folder lists
    (a formulation that did not run has no folder, and the reason from compare.csv)."""
    table = os.path.join(results, "compare.csv")
    if not os.path.exists(table):
        return [(None, results, None)]
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    runs = []
    for row in rows:
        name = row.get("formulation", "")
        folder = os.path.join(results, name)
        if not os.path.isdir(folder) and row.get("status") not in ("ok", "warning", "failed"):
            runs.append((name, None, f"{row.get('status')}: {row.get('message', '')}"))  # it did not run
        else:
            runs.append((name, folder, None))
    return runs


def _frames_only(names: List[str], name: str = "model") -> Dict[str, Any]:
    """A stand-in model for the page: the run's bodies as frames, no shapes or joints."""
    return {"name": name, "gravity": [0.0, 0.0, 0.0], "bodies": [{"name": b, "shape": None} for b in names],
            "joints": [], "loop_joints": []}


def _model_for(folders: List[str], model, names: List[str]) -> tuple:
    """(the page's model, notes): the model given, else the first run's model.json; one that
    cannot be read, or none, leaves the run's bodies drawn as frames, with a note saying why."""
    path = None
    if model is not None and not isinstance(model, treedyn.Model):
        path = os.fspath(model)
    elif model is None:
        path = next((os.path.join(f, "model.json") for f in folders if os.path.exists(os.path.join(f, "model.json"))), None)
        if path is None:
            return _frames_only(names), [f"no model.json beside the results: bodies drawn as frames (treedyn view DIR "
                                         "--model MODEL.json draws their shapes)"]
    try:
        m = model if isinstance(model, treedyn.Model) else treedyn.load_model(path)
    except (treedyn.ModelError, OSError) as e:
        return _frames_only(names), [f"the model could not be read ({e}): bodies drawn as frames"]
    return _model_data(m), []


def _scene_frame(model: Dict[str, Any], poses: np.ndarray) -> Dict[str, Any]:
    """The scene's scale (a characteristic length of the model in motion), centre and floor."""
    r = poses[:, :, :3].reshape(-1, 3)
    r = r[np.all(np.isfinite(r), axis=1)]
    if len(r) == 0:
        r = np.zeros((1, 3))
    low, high = r.min(axis=0), r.max(axis=0)
    extent = float(np.linalg.norm(high - low))
    shapes = []
    for b in model["bodies"]:
        s = b.get("shape") or {}
        shapes += [float(x) for x in s.get("size", [])] + [float(s.get(k, 0.0)) for k in ("radius", "length")]
    scale = max(extent, max(shapes, default=0.0), 0.05)
    g = np.asarray(model["gravity"], dtype=float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
    floor = float((r @ up).min()) - 0.15 * scale
    return {"scale": scale, "centre": ((low + high) / 2).tolist(), "floor": floor}


def _model_data(model: "treedyn.Model") -> Dict[str, Any]:
    spec = json.loads(model.to_json())
    return {
        "name": model.name,
        "gravity": list(model.gravity),
        "bodies": [{"name": b["name"], "shape": b.get("shape")} for b in spec["bodies"]],
        "joints": [{"name": j["name"], "type": j["type"], "child": j["child"], "child_frame": j["child_frame"]}
                   for j in spec.get("joints", [])],
        "loop_joints": list(model.info()["loop_joints"]),
    }


def _deviation(run: "treedyn.Result", reference: "treedyn.Result") -> tuple:
    """The largest body position difference from the reference at the times both sampled."""
    common, i, j = np.intersect1d(np.round(run.t, 9), np.round(reference.t, 9), return_indices=True)
    d = np.linalg.norm(run.poses[i, :, :3] - reference.poses[j, :, :3], axis=2).max(axis=1) if len(common) else np.zeros(0)
    return run.t[i], d


def viewer_data(results: str, model=None, max_mb: float = 30.0, fixed_bytes: int = 800_000) -> Dict[str, Any]:
    """What the page draws, as the JSON object it reads (see write); the poses and curves are
    thinned so that the page, with `fixed_bytes` of script and style, stays under max_mb."""
    notes: List[str] = []
    loaded = []
    if not os.path.isdir(results):
        raise FileNotFoundError(f"{results}: no such folder")
    for name, folder, skipped in _runs_of(results):
        if skipped:
            notes.append(f"{name} did not run ({skipped})")
            continue
        try:
            if not any(os.path.exists(os.path.join(folder, "trajectory" + e)) for e in (".csv", ".npy")):
                raise FileNotFoundError(
                    f"no trajectory.csv or trajectory.npy in {folder}: not the folder of a run (treedyn simulate -o DIR)"
                    + (" nor of a comparison (compare.csv)" if name is None else ""))
            r = treedyn.load_result(folder)
        except (OSError, ValueError, KeyError) as e:
            if name is None:
                raise FileNotFoundError(f"nothing to view: {e}") from None
            notes.append(f"{name}: nothing to draw ({e.__class__.__name__}: {e})")
            continue
        loaded.append((name or r.summary.get("formulation", "run"), folder, r))
    if not loaded:
        raise FileNotFoundError(f"{results}: none of the runs it lists has results to draw")
    data_model, more = _model_for([f for _, f, _ in loaded], model, loaded[0][2].body_names)
    notes += more
    names = [b["name"] for b in data_model["bodies"]]
    runs = []
    for name, folder, r in loaded:
        if r.body_names != names:  # not this model's run: draw its bodies as frames
            notes.append(f"{name}: its trajectory's bodies ({', '.join(r.body_names[:6])}...) are not the model's "
                         f"({', '.join(names[:6])}...): drawn without shapes or joints")
            data_model = {**_frames_only(r.body_names, data_model["name"]), "gravity": data_model["gravity"]}
            names = r.body_names
        runs.append((name, folder, r))
    runs = [x for x in runs if x[2].body_names == names]
    n = len(names)
    # The budget, in bytes before base64 (which makes 4 of 3): 70 % for the poses, 30 % for the curves.
    fixed_bytes += len(json.dumps(data_model)) + 4096 * len(runs)  # the model, names, statuses, messages
    budget = max(max_mb * 1e6 - fixed_bytes, 1e5) * 0.75 * 0.97
    bytes_per_frame = n * 7 * 4 * len(runs) + 8 * len(runs)
    frames_allowed = max(2, int(0.7 * budget // max(bytes_per_frame, 1)))
    curves = len(runs) * 3 + 5 + (0 if len(runs) > 1 or runs[0][2].q is None else runs[0][2].q.shape[1] + runs[0][2].qd.shape[1])
    points = int(min(PLOT_POINTS, max(10, (0.3 * budget - 40 * curves) // (4 * curves + 8))))  # 40: a curve's label
    out_runs = []
    for name, folder, r in runs:
        keep = _stride(len(r.t), frames_allowed)
        if len(keep) < len(r.t):
            notes.append(f"{name}: {len(keep)} of {len(r.t)} samples kept (the page stays under {max_mb:g} MB)")
        summary = r.summary
        # A formulation's warnings name it already ("ali3: ..."): the note says it once.
        notes += [f"{name}: warning: {w.removeprefix(f'{name}: ')}" for w in summary.get("warnings", [])]
        out_runs.append({
            "name": name,
            "status": summary.get("status", "ok"),
            "message": summary.get("message", ""),
            "warnings": summary.get("warnings", []),
            "failure_time": summary.get("failure_time") if summary.get("status") == "failed" else None,
            "times": _b64(np.asarray(r.t[keep], dtype=np.float64)),
            "poses": _b64(np.asarray(r.poses[keep], dtype=np.float32)),
        })
    first = runs[0][2]
    frame = _scene_frame(data_model, np.asarray(first.poses[_stride(len(first.t), 200)]))
    plots = _plots(runs, points)
    title = f"{data_model['name']}: " + (runs[0][0] if len(runs) == 1 else "compare " + ", ".join(x[0] for x in runs))
    return {"title": title, "model": data_model, "runs": out_runs, "plots": plots, "notes": notes, **frame}


def _plots(runs, points: int) -> List[Dict[str, Any]]:
    """The plots' curves, `points` samples each at most (x as float64, y as float32, base64)."""
    def sampled(r):
        idx = _stride(len(r.t), points)
        return idx, r.t[idx]

    plots = []
    if len(runs) == 1:
        name, _, r = runs[0]
        idx, t = sampled(r)
        x = _b64(np.asarray(t, dtype=np.float64))
        plots.append({"title": "energy", "unit": "J", "x": x, "series": [
            {"label": "total", "y": _curve(t, r.total_energy[idx]), "colour": 0x111111},
            {"label": "kinetic", "y": _curve(t, r.kinetic_energy[idx]), "colour": 0xd62728},
            {"label": "potential", "y": _curve(t, r.potential_energy[idx]), "colour": 0x1f77b4}]})
        plots.append({"title": "energy drift", "unit": "J", "x": x,
                      "series": [{"label": "drift", "y": _curve(t, r.energy_drift[idx]), "colour": 0x9467bd}]})
        plots.append({"title": "constraint errors", "unit": "m | m/s", "log": True, "x": x, "series": [
            {"label": "position", "y": _curve(t, r.position_error[idx], True), "colour": 0x2ca02c},
            {"label": "velocity", "y": _curve(t, r.velocity_error[idx], True), "colour": 0xff7f0e}]})
        if r.q is not None and r.q.shape[1] > 0:
            choices = [{"label": f"q:{q}", "y": _curve(t, r.q[idx, k])} for k, q in enumerate(r.q_names)]
            choices += [{"label": f"qd:{q}", "y": _curve(t, r.qd[idx, k])} for k, q in enumerate(r.qd_names)]
            plots.append({"title": "joint coordinate", "unit": "", "x": x, "choices": choices, "series": []})
        return plots
    # Several runs: where they part (deviation from the reference, or the first run), and their drifts.
    reference = next((r for name, _, r in runs if name == "reference"), runs[0][2])
    ref_name = next((name for name, _, r in runs if r is reference), runs[0][0])
    t_all = reference.t[_stride(len(reference.t), points)]
    series_dev, series_drift, series_err = [], [], []
    for name, _, r in runs:
        td, d = _deviation(r, reference)
        series_dev.append({"label": name, "y": _curve(t_all, np.interp(t_all, td, d, right=np.nan) if len(td) else np.full(len(t_all), np.nan))})
        series_drift.append({"label": name, "y": _curve(t_all, np.interp(t_all, r.t, r.energy_drift, right=np.nan))})
        series_err.append({"label": name, "y": _curve(t_all, np.interp(t_all, r.t, r.position_error, right=np.nan), True)})
    x = _b64(np.asarray(t_all, dtype=np.float64))
    return [
        {"title": f"deviation from {ref_name}", "unit": "m", "x": x, "series": series_dev},
        {"title": "energy drift", "unit": "J", "x": x, "series": series_drift},
        {"title": "position constraint error", "unit": "m", "log": True, "x": x, "series": series_err},
    ]


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>treedyn</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>@@CSS@@
body { margin: 0; font: 13px system-ui, sans-serif; color: #222; background: #fff; display: flex; flex-direction: column; height: 100vh; }
header { display: flex; gap: 10px; align-items: center; padding: 6px 10px; border-bottom: 1px solid #ddd; flex-wrap: wrap; }
header h1 { font-size: 14px; margin: 0 12px 0 0; }
header button { min-width: 34px; }
#time { flex: 1; min-width: 160px; }
#clock { font-variant-numeric: tabular-nums; min-width: 90px; }
main { flex: 1 1 62%; display: flex; min-height: 0; }
#view { flex: 1; position: relative; min-height: 200px; overflow: hidden; }
#labels { position: absolute; inset: 0; pointer-events: none; }
.label { position: absolute; transform: translate(-50%, -130%); background: rgba(255,255,255,.8); padding: 0 3px; border-radius: 3px; font-size: 11px; }
aside { width: 220px; padding: 8px; border-left: 1px solid #ddd; overflow: auto; }
aside label { display: block; margin: 3px 0; }
aside label.bad { color: #b00; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin: 0 3px; }
#plots { display: flex; flex-wrap: wrap; gap: 4px; padding: 4px; border-top: 1px solid #ddd; max-height: 38vh; overflow: auto; }
.plot select { display: block; margin-bottom: 2px; }
.banner { padding: 6px 10px; }
.banner.warning { background: #fff3cd; }
.banner.failed { background: #f8d7da; }
#notes { padding: 4px 10px; background: #eef; font-size: 12px; }
</style></head><body>
<header>
<h1 id="title">treedyn</h1>
<button id="back" title="previous frame (left arrow)">&laquo;</button>
<button id="play" title="play or pause (space)">&#x25B6;</button>
<button id="forward" title="next frame (right arrow)">&raquo;</button>
<select id="speed" title="playing speed"><option value="0.1">0.1x</option><option value="0.25">0.25x</option><option value="0.5">0.5x</option><option value="1" selected>1x</option><option value="2">2x</option><option value="4">4x</option></select>
<input id="time" type="range" title="time">
<span id="clock"></span>
<label>follow <select id="follow"><option value="-1">none</option></select></label>
<label><input id="show-labels" type="checkbox"> labels</label>
</header>
<div id="status" class="banner" role="status"></div>
<div id="notes" style="display:none"></div>
<main><div id="view"><div id="labels" style="display:none"></div></div>
<aside><b>runs</b><div id="legend"></div>
<p style="color:#666">Drag to orbit, right-drag to pan, wheel to zoom. Joints: dark dots with their axes; loop-closing joints: red. A run that ended early is drawn as wire after its end.</p></aside></main>
<div id="plots"></div>
<script id="treedyn-data" type="application/json">@@DATA@@</script>
<script>@@SCRIPT@@</script>
</body></html>
"""


def _script_text(name: str) -> str:
    path = os.path.join(HERE, name)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path}: the viewer's script was not built (scripts/build-viewer.sh {HERE}; it needs npm)"
        )
    with open(path) as f:
        return f.read()


def write(results: str, output: Optional[str] = None, model=None, max_mb: float = 30.0) -> str:
    """Writes viewer.html for the run (or the compare folder) in `results`; returns its path.
    `model` (a Model or a model file) when the folder has no model.json. Raises
    FileNotFoundError (no results, no model, the script not built) with what to do."""
    script = _script_text("viewer.bundle.js").replace("</script", "<\\/script")
    css = _script_text("viewer.bundle.css")
    data = viewer_data(results, model, max_mb, len(script) + len(css) + len(PAGE))
    text = json.dumps(data, allow_nan=False, separators=(",", ":")).replace("</", "<\\/")
    output = output or os.path.join(results, "viewer.html")
    page = PAGE.replace("@@CSS@@", css, 1).replace("@@SCRIPT@@", script, 1).replace("@@DATA@@", text, 1)
    treedyn._write_atomically(output, page)
    return output


def main(argv=None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="treedyn view", description="Write viewer.html: the run (or a compare "
                                     "folder's runs) in 3-D with its time plots, one self-contained page.")
    parser.add_argument("results", help="a run's folder (treedyn simulate -o) or a comparison's (treedyn compare -o)")
    parser.add_argument("-o", "--output", help="the page to write (default: RESULTS/viewer.html)")
    parser.add_argument("--model", help="the model file, for results without model.json")
    parser.add_argument("--max-mb", type=float, default=30.0, help="largest page size; samples are thinned to fit")
    a = parser.parse_args(argv)
    try:
        path = write(a.results, a.output, a.model, a.max_mb)
    except (FileNotFoundError, ValueError) as e:
        print(f"treedyn view: {e}", file=sys.stderr)
        return 1
    size = os.path.getsize(path) / 1e6
    print(f"wrote {path} ({size:.1f} MB): open it in a browser")
    return 0
