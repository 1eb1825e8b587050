"""treedyn: dynamics of constrained multi-rigid-body systems by divide and conquer.

    import treedyn
    model = treedyn.load_model("models/four_bar.json")
    sim = treedyn.Simulator(model, "hdca", integrator="rk4", dt=1e-3)
    while sim.time < 1.0:
        sim.set_joint_effort("joint1", [-5.0 * sim.qd[0]])
        sim.step()
    result = treedyn.simulate(model, "ali3", t_end=2.0)
    result.total_energy, result.poses[-1], result.save("results/four_bar")

The C++ library does the work (treedyn._treedyn); this package adds whole runs as Result objects,
reading results back from disk, comparisons as tables and optional matplotlib plots. See
docs/python.md.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import _treedyn
from ._treedyn import (  # noqa: F401  (the public names)
    Model,
    ModelBuilder,
    ModelError,
    SimulationFailed,
    Simulator,
)

__version__ = _treedyn.__version__

__all__ = [
    "Model",
    "ModelBuilder",
    "ModelError",
    "SimulationFailed",
    "Interrupted",
    "Simulator",
    "Result",
    "load_model",
    "import_model",
    "ModelImportWarning",
    "model_from_json",
    "simulate",
    "load_result",
    "compare",
    "formulations",
    "options",
    "sweep",
    "SweepResult",
    "Uniform",
    "Normal",
    "LogUniform",
    "Choice",
]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a whole run: the run stopped where it was; `result` holds what it did."""

    def __init__(self, message: str, result: "Result"):
        super().__init__(message)
        self.result = result


def _overrides(overrides) -> List[tuple]:
    """{path: value} as (path, JSON text) pairs; a value is any JSON-able Python value."""
    if overrides is None:
        return []
    if not isinstance(overrides, dict):
        raise TypeError(f"overrides: expected a dict of path -> value, got {type(overrides).__name__}")
    pairs = []
    for path, value in overrides.items():
        try:
            text = json.dumps(value.tolist() if isinstance(value, np.ndarray) else value, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"override {path}: {value!r} is not a JSON value ({e})") from None
        pairs.append((str(path), text))
    return pairs


class ModelImportWarning(UserWarning):
    """What an imported URDF, MJCF or SDFormat file holds that treedyn does not model (shown by
    default, unlike Python's ImportWarning)."""


def load_model(path, overrides: Optional[Dict[str, Any]] = None) -> Model:
    """Reads a model file, treedyn's JSON or, by its extension, URDF (.urdf), MJCF (.xml, .mjcf)
    or SDFormat (.sdf) imported (docs/import.md), with `overrides` applied first:
    {"bodies.crank.mass": 2, "joints.pin.axis": [0, 0, 1], "forces.spring.stiffness": 50,
    "gravity": [0, 0, -9.81]} (paths as the command line's --set). What an imported file holds
    that treedyn does not model (contacts, limits, actuators, ...) is a ModelImportWarning. Raises
    FileNotFoundError for a missing file and ModelError (a ValueError) naming the item, or the
    override, for a bad model."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(2, "no such model file", path)
    model, import_warnings = _treedyn.load_model(path, _overrides(overrides))
    for w in import_warnings:
        warnings.warn(w, ModelImportWarning, stacklevel=2)
    return model


def import_model(path, output=None, connector_mass_fraction: float = 1e-4):
    """Imports a URDF, MJCF or SDFormat file: (model, warnings), the warnings a list of strings
    (what the file holds that treedyn does not model, and approximations made). With `output`,
    writes the model's JSON there (as `treedyn import FILE -o OUTPUT`). MJCF bodies whose joints no
    single treedyn joint reproduces go through connector bodies carrying
    `connector_mass_fraction` of their mass (0 refuses them)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(2, "no such model file", path)
    model, import_warnings = _treedyn.import_model_file(path, float(connector_mass_fraction))
    if output is not None:
        model.save(os.fspath(output))
    return model, list(import_warnings)


def model_from_json(text: str, overrides: Optional[Dict[str, Any]] = None, source: str = "<model>") -> Model:
    """A model from JSON text, with `overrides` applied first (as load_model); errors name
    `source` (a file name, say) as where the text came from."""
    return _treedyn.model_from_json(text, _overrides(overrides), source)


def formulations() -> List[tuple]:
    """(name, summary) of every formulation."""
    return list(_treedyn.formulations())


def options() -> List[dict]:
    """Every option a Simulator or simulate() takes: name, type, formulations it applies to."""
    return list(_treedyn.options())


@dataclass
class Result:
    """A whole run: NumPy arrays per sample (time along the first axis) and the run's figures.

    t (k,), poses (k, n, 7: x y z qw qx qy qz), twists (k, n, 6: v, w), accelerations (k, n, 6),
    q (k, nq) and qd (k, nv) in the Simulator's joint coordinates, kinetic_energy, potential_energy,
    total_energy, work_nonconservative, energy_drift, position_error, velocity_error,
    acceleration_error (k,: the largest over joints), reactions (k, joints, 6: force, torque on the
    child at its joint frame) or None; status ("ok"; "warning": it reached t_end but a check of its
    accuracy failed, message says which; "failed"; "interrupted"), message, warnings (notices),
    summary (the figures of summary.json, with "judgement": each check against its threshold).
    """

    t: np.ndarray
    poses: np.ndarray
    twists: np.ndarray
    q: Optional[np.ndarray]
    qd: Optional[np.ndarray]
    kinetic_energy: np.ndarray
    potential_energy: np.ndarray
    total_energy: np.ndarray
    work_nonconservative: np.ndarray
    energy_drift: np.ndarray
    position_error: np.ndarray
    velocity_error: np.ndarray
    acceleration_error: np.ndarray
    reactions: Optional[np.ndarray]
    accelerations: Optional[np.ndarray]
    summary: Dict[str, Any]
    body_names: List[str]
    joint_names: List[str]
    q_names: List[str] = field(default_factory=list)
    qd_names: List[str] = field(default_factory=list)
    _run: Any = field(default=None, repr=False)
    _source: Optional[str] = field(default=None, repr=False)
    _columns: Optional[Dict[str, np.ndarray]] = field(default=None, repr=False)

    @property
    def status(self) -> str:
        return self.summary.get("status", "ok")

    @property
    def message(self) -> str:
        return self.summary.get("message", "")

    @property
    def warnings(self) -> List[str]:
        return list(self.summary.get("warnings", []))

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def body(self, name: str) -> np.ndarray:
        """The poses (k, 7) of one body."""
        return self.poses[:, self.body_names.index(name), :]

    def columns(self) -> List[str]:
        """The name of every column of the run's files (trajectory, metrics, joints), without the
        unit: "t", "A.x", "A.qw", "A.vx", "total", "energy_drift", "position_error", "steps",
        "joint1.position_error", "joint1.fx", "spring.tension", "q:crank", "qd:crank", ..."""
        return list(self._column_table())

    def column(self, name: str) -> np.ndarray:
        """One column of the run's files as an array over the samples, by its name (columns()).
        From a run in memory, the joint-frame reactions of joints.csv ("reaction:...") are not
        available (their world-frame twins "<joint>.fx" ... are); from files, every column is."""
        table = self._column_table()
        if name not in table:
            near = [c for c in table if name.split(".")[0] in c][:8] or list(table)[:8]
            raise KeyError(f"{name!r}: the run has no such column (some it has: {', '.join(near)}; all: Result.columns())")
        return table[name]

    def _column_table(self) -> Dict[str, np.ndarray]:
        if self._columns is None:
            self._columns = _columns_of(self)
        return self._columns

    def save(self, directory: str) -> str:
        """Writes trajectory.csv, metrics.csv and summary.json (the command line's files, by its
        own writer, with joints.csv: q and qd) into `directory`; returns it."""
        if self._run is not None:
            self._run.save(directory)
        elif self._source is not None:
            os.makedirs(directory, exist_ok=True)
            for name in ("trajectory.csv", "metrics.csv", "joints.csv", "trajectory.npy", "metrics.npy", "joints.npy",
                         "columns.json", "summary.json"):
                path = os.path.join(self._source, name)
                if os.path.exists(path) and os.path.abspath(path) != os.path.abspath(os.path.join(directory, name)):
                    shutil.copyfile(path, os.path.join(directory, name))
        else:
            raise ValueError("this result has nothing to save from")
        return directory

    def __repr__(self) -> str:
        return (
            f"<treedyn.Result {self.summary.get('model', '')} with {self.summary.get('formulation', '')}: "
            f"{self.status}, {len(self.t)} samples to t = {self.t[-1] if len(self.t) else 0:g} s>"
        )


def _columns_of(r: Result) -> Dict[str, np.ndarray]:
    """The files' columns of a run in memory, named as ResultWriter names them (a test checks
    that these names and numbers are the files')."""
    a = r._run.metric_columns() if r._run is not None else {}
    table: Dict[str, np.ndarray] = {"t": r.t}
    for i, body in enumerate(r.body_names):
        for c, name in enumerate(("x", "y", "z", "qw", "qx", "qy", "qz")):
            table[f"{body}.{name}"] = r.poses[:, i, c]
        for c, name in enumerate(("vx", "vy", "vz", "wx", "wy", "wz")):
            table[f"{body}.{name}"] = r.twists[:, i, c]
    table.update(
        kinetic=r.kinetic_energy,
        potential=r.potential_energy,
        total=r.total_energy,
        work_nonconservative=r.work_nonconservative,
        energy_drift=r.energy_drift,
        position_error=r.position_error,
        velocity_error=r.velocity_error,
        acceleration_error=r.acceleration_error,
    )
    levels = ("position_error", "velocity_error", "acceleration_error")
    if "solver" in a:
        for c, name in enumerate(("steps", "rhs_evaluations", "newton_iterations")):
            table[name] = a["solver"][:, c]
        for i, name in enumerate(list(r.joint_names) + list(a["driver_names"])):
            for c, level in enumerate(levels):
                table[f"{name}.{level}"] = a["constraint_errors"][:, i, c]
    if r.reactions is not None:
        for i, joint in enumerate(r.joint_names):
            for c, name in enumerate(("fx", "fy", "fz", "tx", "ty", "tz")):
                table[f"{joint}.{name}"] = r.reactions[:, i, c]
    if a.get("driver_efforts") is not None:
        for i, name in enumerate(a["driver_names"]):
            table[f"{name}.effort"] = a["driver_efforts"][:, i]
    for i, name in enumerate(a.get("element_columns", [])):
        table[name] = a["element_loads"][:, i // 2, i % 2]
    if r.q is not None:
        for i, name in enumerate(r.q_names):
            table[f"q:{name}"] = r.q[:, i]
        for i, name in enumerate(r.qd_names):
            table[f"qd:{name}"] = r.qd[:, i]
    return table


def _result_of(run) -> Result:
    a = run.arrays()
    return Result(
        t=a["t"],
        poses=a["poses"],
        twists=a["twists"],
        q=a["q"],
        qd=a["qd"],
        kinetic_energy=a["kinetic_energy"],
        potential_energy=a["potential_energy"],
        total_energy=a["total_energy"],
        work_nonconservative=a["work_nonconservative"],
        energy_drift=a["energy_drift"],
        position_error=a["position_error"],
        velocity_error=a["velocity_error"],
        acceleration_error=a["acceleration_error"],
        reactions=a["reactions"],
        accelerations=a["accelerations"],
        summary=json.loads(run.summary_json()),  # summary.json's text, by the CLI's writer
        body_names=list(a["body_names"]),
        joint_names=list(a["joint_names"]),
        q_names=list(a["q_names"]),
        qd_names=list(a["qd_names"]),
        _run=run,
    )


def simulate(
    model: Model,
    formulation: Optional[str] = None,
    t_end: Optional[float] = None,
    dt: Optional[float] = None,
    sample_every: int = 1,
    output: Optional[str] = None,
    checks: Optional[Dict[str, float]] = None,
    estimate_error: Optional[bool] = None,
    **options,
) -> Result:
    """Runs `model` from its initial state to t_end, sampling every dt, as `treedyn simulate` does.

    formulation, t_end and dt default to the model file's, else "reference", 10 s and 0.01 s; dt
    is the step of the fixed-step methods and the sampling interval of the adaptive ones. Options
    use the command line's names (integrator, rtol, atol, alpha, newton_max, ...; see options());
    one that does not apply to the formulation raises ValueError. With `output`, the command line's
    files are written there too. A run that reaches t_end judges itself (Result.status "ok" or
    "warning", summary["judgement"]); `checks` changes the thresholds as the CLI's --check-*:
    {"energy": 0.1, "position": 1e-2, "velocity": 0.1, "quaternion": 1e-6, "accuracy": 1e-2,
    "branch": 0.1}, 0 switching one off ("branch": a run that comes near a singular position of its
    closed loops is checked by a refined companion from there on). `estimate_error=True` runs a
    refined companion beside the run (half the step or a hundredth of the tolerances):
    summary["error_estimate"] holds the largest differences of body positions, joint coordinates
    and energy (Richardson-scaled for a halved step), judged by the "accuracy" check (the CLI's
    --estimate-error). By default (None) fixed-step runs (ali3, half- and fully-implicit, euler,
    rk4, symplectic-euler), which control no error of their own, get one anyway, as do runs from
    where they come near a singular position; False: none at all (--no-estimate-error).
    Without dt, a fixed-step run whose estimate fails the accuracy check with a step that would
    meet it is run again from its start at that step, as the CLI does without --dt
    (summary["step_choice"] lists the steps tried).

    Raises ModelError for a bad model, SimulationFailed (with .time and the partial .result) when
    the run fails, Interrupted (a KeyboardInterrupt, with .result) on Ctrl-C. The GIL is released
    while it runs.
    """
    if not isinstance(model, Model):
        raise TypeError(f"simulate: expected a treedyn.Model, got {type(model).__name__}")
    defaults = model.defaults
    def given(value, name, fallback):  # the caller's, else the model file's, else the library's
        return value if value is not None else (defaults[name] if defaults[name] is not None else fallback)

    formulation = formulation or defaults["formulation"] or _treedyn._FALLBACK_FORMULATION
    t_end = float(given(t_end, "t_end", _treedyn._FALLBACK_T_END))
    choose_step = dt is None  # the model's step: a fixed-step run may take a smaller one, as the CLI's
    dt = float(given(dt, "dt", _treedyn._FALLBACK_DT))
    if not (math.isfinite(t_end) and t_end >= 0.0):
        raise ValueError(f"simulate: t_end must be a finite time, not before 0, got {t_end}")
    if not (math.isfinite(dt) and dt > 0.0):
        raise ValueError(f"simulate: dt must be positive and finite, got {dt}")
    if not isinstance(sample_every, int) or sample_every < 1:
        raise ValueError(f"simulate: sample_every must be a positive whole number, got {sample_every!r}")
    run = _treedyn._simulate(model, formulation, t_end, dt, sample_every, options, dict(checks or {}),
                             None if estimate_error is None else bool(estimate_error), choose_step)
    result = _result_of(run)
    if output is not None:
        result.save(output)
    if result.status == "interrupted":
        raise Interrupted(result.message, result)
    if result.status == "failed":
        error = SimulationFailed(result.message)
        error.time = result.summary["failure_time"]
        error.result = result
        raise error
    return result


def _write_atomically(path: str, data) -> None:
    """Writes `data` (text or bytes) to `path` whole or not at all: a temporary file beside it,
    then renamed over it."""
    temporary = path + ".partial"
    with open(temporary, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.replace(temporary, path)


def _column_name(cell: str) -> str:
    """A CSV header cell without its unit: "A.x [m]" -> "A.x"."""
    if cell.endswith("]") and " [" in cell:
        return cell[: cell.rindex(" [")]
    return cell


def _read_csv(path: str):
    with open(path, newline="") as f:
        first = f.readline()
        if not first:
            raise ValueError(f"{path}: empty")
        header = [_column_name(h) for h in next(csv.reader([first]))]
        try:  # numpy's C reader: a 1024-body run's 13,000 columns in a second, not twenty
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # a run with no rows yet
                data = np.loadtxt(f, delimiter=",", ndmin=2, dtype=float)
        except ValueError:
            data = None
    if data is not None:
        if data.size == 0:
            data = np.zeros((0, len(header)))
        return header, data
    with open(path, newline="") as f:  # empty cells (missing values): the general reader
        rows = list(csv.reader(f))
    data = np.array([[float(x) if x not in ("", "nan") else math.nan for x in r] for r in rows[1:]], dtype=float)
    if data.size == 0:
        data = np.zeros((0, len(header)))
    return header, data


def _read_table(directory: str, base: str, required: bool = True):
    """A result file as (column names, rows): base.csv, or base.npy with its names from
    columns.json (`treedyn simulate --format npy`). None when absent and not required."""
    csv_path, npy_path = os.path.join(directory, base + ".csv"), os.path.join(directory, base + ".npy")
    if os.path.exists(csv_path):
        return _read_csv(csv_path)
    if os.path.exists(npy_path):
        with open(os.path.join(directory, "columns.json")) as f:
            names = json.load(f)[base + ".npy"]
        data = np.load(npy_path)
        if data.ndim != 2 or data.shape[1] != len(names):
            raise ValueError(f"{npy_path}: {data.shape} does not match the {len(names)} columns columns.json lists")
        return [_column_name(n) for n in names], data
    if required:
        raise FileNotFoundError(f"{directory}: no {base}.csv or {base}.npy")
    return None


def load_result(directory: str) -> Result:
    """Reads a run's files (trajectory, metrics and, when present, joints as .csv or as .npy with
    columns.json; summary.json) back as a Result."""
    summary_path = os.path.join(directory, "summary.json")
    with open(summary_path) as f:
        summary = json.load(f)
    header, traj = _read_table(directory, "trajectory")
    if (len(header) - 1) % 13 != 0:
        raise ValueError(f"{directory}/trajectory.csv: expected 13 columns per body after t, got {len(header) - 1}")
    n = (len(header) - 1) // 13
    bodies = [header[1 + 13 * k][: -len(".x")] for k in range(n)]  # "<body>.x" opens each body's columns
    per_body = traj[:, 1:].reshape(len(traj), n, 13)
    poses, twists = per_body[:, :, :7].copy(), per_body[:, :, 7:].copy()
    mheader, metrics = _read_table(directory, "metrics")
    col = {name: i for i, name in enumerate(mheader)}

    def column(name):
        return metrics[:, col[name]].copy() if name in col else np.full(len(metrics), math.nan)

    joints = [h[: -len(".fx")] for h in mheader if h.endswith(".fx")]
    reactions = None
    if joints:
        reactions = np.stack(
            [np.stack([column(f"{j}.{c}") for c in ("fx", "fy", "fz", "tx", "ty", "tz")], axis=1) for j in joints],
            axis=1,
        )
    q = qd = None
    q_names: List[str] = []
    qd_names: List[str] = []
    files_columns = {name: traj[:, i] for i, name in enumerate(header)}
    files_columns.update({name: metrics[:, i] for i, name in enumerate(mheader) if name != "t"})
    joint_table = _read_table(directory, "joints", required=False)
    if joint_table is not None:
        jheader, jdata = joint_table
        files_columns.update({name: jdata[:, i] for i, name in enumerate(jheader) if name != "t"})
        qi = [i for i, h in enumerate(jheader) if h.startswith("q:")]
        qdi = [i for i, h in enumerate(jheader) if h.startswith("qd:")]
        q, qd = jdata[:, qi].copy(), jdata[:, qdi].copy()
        q_names = [jheader[i][2:] for i in qi]
        qd_names = [jheader[i][3:] for i in qdi]
    return Result(
        t=traj[:, 0].copy(),
        poses=poses,
        twists=twists,
        q=q,
        qd=qd,
        kinetic_energy=column("kinetic"),
        potential_energy=column("potential"),
        total_energy=column("total"),
        work_nonconservative=column("work_nonconservative"),
        energy_drift=column("energy_drift"),
        position_error=column("position_error"),
        velocity_error=column("velocity_error"),
        acceleration_error=column("acceleration_error"),
        reactions=reactions,
        accelerations=None,
        summary=summary,
        body_names=bodies,
        joint_names=joints,
        q_names=q_names,
        qd_names=qd_names,
        _source=directory,
        _columns=files_columns,
    )


def compare(
    model: Model,
    formulations: Optional[Sequence[str]] = None,
    t_end: Optional[float] = None,
    dt: Optional[float] = None,
    rtol: Optional[float] = None,
    alpha: Optional[float] = None,
    sample: Optional[float] = None,
    threads: int = 1,
    reference_max_bodies: int = 64,
    output: Optional[str] = None,
    as_dataframe: Optional[bool] = None,
    estimate_error: Optional[bool] = None,
):
    """Runs the model under several formulations (all by default) with each method's published
    settings, as `treedyn compare` does, and returns the table: a pandas DataFrame when pandas is
    installed (or as_dataframe=True), else a list of dicts (as_dataframe=False forces the list).
    Each run's files go to output/<formulation>/ when `output` is given. Ctrl-C raises
    Interrupted with the rows so far as .result (the run in progress "interrupted", the rest
    "skipped"). With estimate_error, each run goes beside a refined companion (about twice the
    cost) and the rows' error_estimate_m and converged ("yes", "no") say which runs are
    converged; by default (None) the fixed-step runs and passages near singular positions are
    checked so (as simulate); False: no companions."""
    if not isinstance(model, Model):
        raise TypeError(f"compare: expected a treedyn.Model, got {type(model).__name__}")
    opts = dict(
        formulations=list(formulations) if formulations is not None else None,
        t_end=t_end,
        dt=dt,
        rtol=rtol,
        alpha=alpha,
        sample=sample,
        threads=int(threads),
        reference_max_bodies=int(reference_max_bodies),
        estimate_error=None if estimate_error is None else bool(estimate_error),
    )
    rows, interrupted = _treedyn._compare(model, opts, output or "")
    rows = list(rows)
    if interrupted:
        raise Interrupted("compare interrupted; .result holds the table so far", rows)
    if as_dataframe is False:
        return rows
    try:
        import pandas  # optional
    except ImportError:
        if as_dataframe:
            raise
        return rows
    return pandas.DataFrame(rows)


from .sweeps import Choice, LogUniform, Normal, SweepResult, Uniform, sweep  # noqa: E402  (needs the names above)
