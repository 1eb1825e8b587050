"""Parameter sweeps and Monte Carlo runs of one model, on Dask's distributed scheduler.

    import treedyn
    from treedyn.sweep import sweep, Uniform
    table = sweep("models/four_bar.json", {"bodies.B.mass": [1, 2, 3], "bodies.C.mass": [1, 2]},
                  t_end=2.0, outputs=["qd:joint1", "max:position_error"], output="results/fb_sweep")
    table = sweep(model, {"bodies.B.mass": Uniform(0.9, 1.1)}, n=500, seed=1, client=Client("tcp://host:8786"))

Each sample is the model with its overrides (the paths of `treedyn simulate --set`) run as one Dask
task; with no client, an embedded LocalCluster of one single-threaded worker process per core. The
client collects one row per sample (its parameters, status, message, the requested end values),
appends each row to <output>/samples.jsonl as it arrives (so a sweep started again on the same folder
skips what is done) and the whole table to <output>/sweep.csv, in sample order: the table does not
depend on the number of workers or on the order they finish. A sample whose run fails, or whose
model its values make invalid, is a row "failed" with the message; a Python error in the task is a
row "error"; a sample whose worker died more often than Dask allows (its scheduler's
allowed-failures) is a row "lost", run again by the next sweep on that folder. `treedyn sweep`
(`python -m treedyn sweep`) is the command line. See docs/sweeps.md.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import itertools
import json
import math
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

import treedyn

__all__ = ["sweep", "grid", "random_samples", "Uniform", "Normal", "LogUniform", "Choice", "SweepResult", "main"]

STATUSES = ("ok", "warning", "failed", "error", "lost")
_REDUCTIONS = ("max", "min", "mean", "absmax")


# Samples ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Uniform:
    """Uniformly distributed in [low, high)."""

    low: float
    high: float

    def draw(self, rng: np.random.Generator, n: int) -> List[float]:
        return [float(x) for x in rng.uniform(self.low, self.high, n)]


@dataclass(frozen=True)
class Normal:
    """Normally distributed: mean and standard deviation."""

    mean: float
    std: float

    def draw(self, rng: np.random.Generator, n: int) -> List[float]:
        return [float(x) for x in rng.normal(self.mean, self.std, n)]


@dataclass(frozen=True)
class LogUniform:
    """log-uniformly distributed in [low, high), both > 0 (a stiffness over decades)."""

    low: float
    high: float

    def draw(self, rng: np.random.Generator, n: int) -> List[float]:
        if not (self.low > 0 and self.high > 0):
            raise ValueError(f"LogUniform needs low and high > 0, got {self.low}, {self.high}")
        return [float(x) for x in np.exp(rng.uniform(math.log(self.low), math.log(self.high), n))]


@dataclass(frozen=True)
class Choice:
    """One of `values` (any JSON values), equally likely."""

    values: tuple

    def draw(self, rng: np.random.Generator, n: int) -> List[Any]:
        return [self.values[int(i)] for i in rng.integers(0, len(self.values), n)]


_DISTRIBUTIONS = (Uniform, Normal, LogUniform, Choice)


def grid(axes: Dict[str, Sequence[Any]]) -> List[Dict[str, Any]]:
    """Every combination of the axes' values, the last path varying fastest."""
    paths = list(axes)
    values = []
    for path in paths:
        v = axes[path]
        v = v.tolist() if isinstance(v, np.ndarray) else list(v)
        if not v:
            raise ValueError(f"grid: {path} has no values")
        values.append(v)
    return [dict(zip(paths, combination)) for combination in itertools.product(*values)]


def random_samples(distributions: Dict[str, Any], n: int, seed: int) -> List[Dict[str, Any]]:
    """n samples drawn from the distributions (numpy's default generator seeded with `seed`;
    each path drawn in the dict's order), reproducible from the seed."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"random_samples: n must be a positive whole number, got {n!r}")
    rng = np.random.default_rng(seed)
    columns = {}
    for path, d in distributions.items():
        if not isinstance(d, _DISTRIBUTIONS):
            raise TypeError(f"random_samples: {path}: expected Uniform, Normal, LogUniform or Choice, got {d!r}")
        columns[path] = d.draw(rng, n)
    return [{path: columns[path][i] for path in columns} for i in range(n)]


def _samples_of(parameters, n: Optional[int], seed: Optional[int]):
    """(samples, seed used): a list of dicts as given; a dict of sequences as a grid; a dict of
    distributions as n random samples."""
    if isinstance(parameters, dict):
        if not parameters:
            raise ValueError("sweep: no parameters to vary")
        random_paths = [p for p, v in parameters.items() if isinstance(v, _DISTRIBUTIONS)]
        if random_paths and len(random_paths) != len(parameters):
            raise ValueError(
                "sweep: give either distributions (a Monte Carlo sweep) or lists of values (a grid) for every "
                f"path, not both (distributions: {', '.join(random_paths)})"
            )
        if random_paths:
            if n is None:
                raise ValueError("sweep: distributions need n, the number of samples")
            if seed is None:
                seed = int(np.random.SeedSequence().entropy % (2**63))
            return random_samples(parameters, n, seed), seed
        for path, v in parameters.items():
            if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
                raise ValueError(
                    f"sweep: {path}: a grid axis needs a list of values, got {v!r} (a value every sample shares goes in fixed=)"
                )
        return grid(parameters), seed
    if isinstance(parameters, (list, tuple)):
        samples = [dict(s) for s in parameters]
        if not samples:
            raise ValueError("sweep: no samples")
        return samples, seed
    raise TypeError(f"sweep: parameters must be a dict (grid or distributions) or a list of dicts, got {type(parameters).__name__}")


# One sample, on a worker ------------------------------------------------------------------------


def _json_value(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


def _end_value(result: "treedyn.Result", name: str) -> float:
    """What `name` asks for: a column's last value, "max:"/"min:"/"mean:"/"absmax:" a column over
    the samples, or a number of summary.json."""
    reduction, _, column = name.partition(":")
    if reduction in _REDUCTIONS:
        x = np.asarray(result.column(column), dtype=float)
        if len(x) == 0:
            return math.nan
        return float({"max": np.max, "min": np.min, "mean": np.mean, "absmax": lambda v: np.max(np.abs(v))}[reduction](x))
    if name in result.summary and not name.startswith(("q:", "qd:")):
        value = result.summary[name]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ValueError(f"output {name!r}: summary.json's {name} is not a number")
    x = result.column(name)
    return float(x[-1]) if len(x) else math.nan


def _check_outputs(result: "treedyn.Result", outputs: Sequence[str]) -> None:
    """Raises ValueError naming an output the run cannot give."""
    for name in outputs:
        try:
            _end_value(result, name)
        except KeyError as e:
            raise ValueError(f"output {name!r}: {e.args[0]}") from None


def _run_files(result: "treedyn.Result") -> Dict[str, bytes]:
    with tempfile.TemporaryDirectory(prefix="treedyn-sample-") as d:
        result.save(d)
        files = {}
        for name in sorted(os.listdir(d)):
            with open(os.path.join(d, name), "rb") as f:
                files[name] = f.read()
        return files


def _job(job: Dict[str, Any]) -> Dict[str, Any]:
    """The sweep's shared inputs as a Dask task of their own (recomputed, not lost, with a worker)."""
    return job


def run_sample(job: Dict[str, Any], index: int, overrides: Dict[str, Any]) -> Dict[str, Any]:
    """Runs sample `index` (the job's model with `overrides` over the job's fixed values) and
    returns its record: the table's row, the wall time, and its files when the job saves runs.
    Never raises for a bad sample: its row says failed or error."""
    start = time.perf_counter()
    row: Dict[str, Any] = {"sample": index, "status": "ok", "message": "", "warnings": "", "t_reached": math.nan}
    for name in job["outputs"]:
        row[name] = math.nan
    files = None
    try:
        model = treedyn.model_from_json(job["model"], {**job["fixed"], **overrides}, job["source"])
        result = None
        try:
            result = treedyn.simulate(model, job["formulation"], job["t_end"], job["dt"], **job["options"])
        except treedyn.SimulationFailed as e:
            result = e.result
            row.update(status="failed", message=str(e))
        row["warnings"] = " | ".join(result.warnings)
        row["t_reached"] = float(result.t[-1]) if len(result.t) else math.nan
        row["status"], row["message"] = (result.status, result.message) if row["status"] == "ok" else (row["status"], row["message"])
        if row["status"] in ("ok", "warning"):  # reached t_end: its end values (a warning row says what it left)
            for name in job["outputs"]:
                row[name] = _end_value(result, name)
        if job["save_runs"]:
            files = _run_files(result)
    except treedyn.ModelError as e:
        row.update(status="failed", message=f"model: {e}")
    except Exception as e:  # a bug or a surprise: recorded, never lost
        row.update(status="error", message=f"{type(e).__name__}: {e}")
    return {"row": row, "wall_seconds": time.perf_counter() - start, "worker": _worker_address(), "files": files}


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return "local"


# The table ----------------------------------------------------------------------------------------


def _cell(value) -> str:
    """Exact and stable text: floats by repr (shortest round trip), JSON for lists."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


@dataclass
class SweepResult:
    """One row per sample (dicts in sample order: sample, the parameters, status, message,
    warnings, t_reached, the outputs), the table's columns, and where it was written."""

    rows: List[Dict[str, Any]]
    columns: List[str]
    output: Optional[str] = None
    wall_seconds: float = 0.0
    skipped: int = 0
    complete: bool = True
    records: Dict[int, Dict[str, Any]] = field(default_factory=dict, repr=False)

    def counts(self) -> Dict[str, int]:
        """Samples per status."""
        return {s: sum(1 for r in self.rows if r["status"] == s) for s in STATUSES}

    @property
    def ok(self) -> bool:
        return self.complete and all(r["status"] == "ok" for r in self.rows)

    def column(self, name: str) -> np.ndarray:
        """One column over the samples, as floats (NaN where a sample has none)."""
        if name not in self.columns:
            raise KeyError(f"{name!r}: the table has {', '.join(self.columns)}")
        return np.array([r[name] if isinstance(r[name], (int, float)) else math.nan for r in self.rows], dtype=float)

    def to_dataframe(self):
        import pandas  # optional

        return pandas.DataFrame(self.rows, columns=self.columns)

    def csv(self) -> str:
        text = io.StringIO()
        w = csv.writer(text, lineterminator="\n")
        w.writerow(self.columns)
        for r in self.rows:
            w.writerow([_cell(r.get(c, "")) for c in self.columns])
        return text.getvalue()

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        c = self.counts()
        return f"<treedyn.SweepResult {len(self.rows)} samples: " + ", ".join(f"{v} {k}" for k, v in c.items() if v) + ">"


class _Folder:
    """<output>/: sweep.json (what the sweep is), model.json, samples.jsonl (each finished
    sample's record, a line appended as it arrives: one file, not one per sample, whose creation
    cost 0.7 ms a sample here), runs/<index>/ (its files, when saved), sweep.csv (the table)."""

    def __init__(self, path: str, manifest: Dict[str, Any], model_text: str):
        self.path = path
        self.log_path = os.path.join(path, "samples.jsonl")
        os.makedirs(path, exist_ok=True)
        manifest_path = os.path.join(path, "sweep.json")
        if os.path.exists(manifest_path):
            with open(manifest_path) as f:
                earlier = json.load(f)
            if earlier != manifest:
                differ = [k for k in sorted(set(earlier) | set(manifest)) if earlier.get(k) != manifest.get(k)]
                raise ValueError(
                    f"{path} holds another sweep (its {', '.join(differ)} differ from this one's); "
                    "give another output folder, or remove this one to start again"
                )
        else:
            treedyn._write_atomically(os.path.join(path, "model.json"), model_text)
            treedyn._write_atomically(manifest_path, json.dumps(manifest, indent=1) + "\n")
        self.log = None

    def done(self) -> Dict[int, Dict[str, Any]]:
        """Records of the samples finished earlier, the last line of each sample's winning (a
        lost sample is run again; a line cut short by a crash is ignored)."""
        records: Dict[int, Dict[str, Any]] = {}
        if not os.path.exists(self.log_path):
            return records
        with open(self.log_path) as f:
            for line in f:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if record["row"]["status"] == "lost":
                    records.pop(record["row"]["sample"], None)
                else:
                    records[record["row"]["sample"]] = record
        return records

    def keep(self, record: Dict[str, Any]) -> None:
        index = record["row"]["sample"]
        files = record.pop("files", None)
        if files:
            run = os.path.join(self.path, "runs", f"{index:06d}")
            os.makedirs(run, exist_ok=True)
            for name, data in files.items():
                treedyn._write_atomically(os.path.join(run, name), data)
        if self.log is None:
            self.log = open(self.log_path, "a")
            if self.log.tell() > 0:  # a line a crash cut short ends here, not inside the next
                self.log.write("\n")
        row = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in record["row"].items()}
        self.log.write(json.dumps({**record, "row": row}, allow_nan=False) + "\n")
        self.log.flush()

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None

    def write_table(self, table: SweepResult) -> None:
        self.close()
        treedyn._write_atomically(os.path.join(self.path, "sweep.csv"), table.csv())


def _restore_nan(record: Dict[str, Any]) -> Dict[str, Any]:
    record["row"] = {k: (math.nan if v is None else v) for k, v in record["row"].items()}
    return record


# The sweep ----------------------------------------------------------------------------------------


class _Progress:
    """tqdm's bar (with ETA) on a terminal; elsewhere a line every 5 s; nothing when quiet."""

    def __init__(self, total: int, initial: int, mode: Optional[bool]):
        self.total, self.done, self.failed = total, initial, 0
        self.start, self.last = time.monotonic(), time.monotonic()
        self.mode = mode if mode is not None else sys.stderr.isatty()
        self.bar = None
        if self.mode == "log" or self.mode is False:
            return
        try:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=initial, unit="sample", desc="sweep", file=sys.stderr, dynamic_ncols=True)
        except ImportError:
            self.mode = "log"

    def update(self, status: str) -> None:
        self.done += 1
        self.failed += status != "ok"
        if self.bar is not None:
            self.bar.update(1)
            if self.failed:
                self.bar.set_postfix_str(f"{self.failed} not ok", refresh=False)
        elif self.mode == "log" and time.monotonic() - self.last >= 5.0:
            self.last = time.monotonic()
            elapsed = self.last - self.start
            print(f"sweep: {self.done}/{self.total} samples, {self.failed} not ok, {elapsed:.0f} s", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _local_client(workers: Optional[int]):
    from distributed import Client, LocalCluster

    n = workers or len(os.sched_getaffinity(0))
    cluster = LocalCluster(
        n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40,  # logging.ERROR
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},  # its HTTP server on a free port, not 8787's
    )
    return Client(cluster), cluster


def _model_text(model) -> str:
    if isinstance(model, treedyn.Model):
        return model.to_json()
    path = os.fspath(model)
    if not os.path.exists(path):
        raise FileNotFoundError(2, "no such model file", path)
    if treedyn._treedyn.model_format(path) != "JSON":
        return treedyn.load_model(path).to_json()  # imported once (its warnings shown here); samples override the JSON
    with open(path) as f:
        return f.read()


def sweep(
    model,
    parameters,
    formulation: Optional[str] = None,
    t_end: Optional[float] = None,
    dt: Optional[float] = None,
    outputs: Sequence[str] = (),
    client=None,
    output: Optional[str] = None,
    save_runs: bool = False,
    fixed: Optional[Dict[str, Any]] = None,
    n: Optional[int] = None,
    seed: Optional[int] = None,
    workers: Optional[int] = None,
    progress: Optional[bool] = None,
    options: Optional[Dict[str, Any]] = None,
) -> SweepResult:
    """Runs `model` (a treedyn.Model or a model file) once per sample of `parameters` on Dask.

    parameters: {path: [values]} for a grid (every combination, the last path fastest), {path:
    Uniform(a, b) | Normal(m, s) | LogUniform(a, b) | Choice([...])} with n and seed for Monte
    Carlo, or a list of {path: value} dicts. Paths are --set's ("bodies.crank.mass",
    "joints.pin.axis", "forces.spring.stiffness", "gravity"); `fixed` holds values every sample
    shares. formulation, t_end, dt and options (integrator, rtol, ...) are simulate()'s.
    outputs: names of the end values each row gets: a column of the run's files ("qd:joint1",
    "B.x", "total", "spring.tension": its last value), "max:", "min:", "mean:" or "absmax:"
    before a column (over the samples of the run), or a number of summary.json ("steps",
    "max_position_error", "wall_seconds").

    client: a distributed.Client (a cluster's scheduler); None starts a LocalCluster with
    `workers` single-threaded processes (default: one per core this process may use) and stops it
    after. output: a folder for sweep.csv, each sample's record (a sweep started again there skips
    the finished ones) and, with save_runs, each run's files in runs/<sample>/. progress: a bar
    (default when stderr is a terminal), "log" (a line every 5 s) or False.

    Returns a SweepResult (rows in sample order). Raises ValueError for an unknown path, option or
    output (checked on the first sample before anything is submitted), Interrupted on Ctrl-C
    (.result holds the rows done; the folder keeps them).
    """
    start = time.perf_counter()
    samples, seed = _samples_of(parameters, n, seed)
    fixed = {str(k): _json_value(v) for k, v in (fixed or {}).items()}
    samples = [{str(k): _json_value(v) for k, v in s.items()} for s in samples]
    text = _model_text(model)
    source = model.name + " (a Model)" if isinstance(model, treedyn.Model) else os.fspath(model)
    options = dict(options or {})
    outputs = list(outputs)
    for name in outputs:
        if name in ("sample", "status", "message", "warnings", "t_reached"):
            raise ValueError(f"output {name!r}: every row has it already")
    paths = list(dict.fromkeys(p for s in samples for p in s))
    # The spec checked here, on the first sample, so that a typo stops the sweep before it starts.
    first = treedyn.model_from_json(text, {**fixed, **samples[0]}, source)
    for p in paths:  # a path only later samples use
        if p not in samples[0]:
            value = next(s[p] for s in samples if p in s)
            treedyn.model_from_json(text, {**fixed, p: value}, source)
    try:
        probe = treedyn.simulate(first, formulation, 0.0, dt, **options)
    except treedyn.SimulationFailed as e:  # the first sample's row will say so; its columns still name what there is
        probe = e.result
    _check_outputs(probe, outputs)
    defaults = first.defaults
    formulation = formulation or defaults["formulation"] or "reference"
    job = dict(
        model=text,
        source=os.path.basename(source),
        formulation=formulation,
        t_end=t_end,
        dt=dt,
        options=options,
        outputs=outputs,
        fixed=fixed,
        save_runs=bool(save_runs),
    )
    manifest = {
        "treedyn": treedyn.__version__,
        "model_sha256": hashlib.sha256(text.encode()).hexdigest(),
        **{k: v for k, v in job.items() if k not in ("model", "source", "save_runs")},  # the model by its hash
        "seed": seed,
        "parameters": paths,
        "samples": samples,
    }
    digest = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()[:16]
    folder = _Folder(output, manifest, text) if output is not None else None
    records = folder.done() if folder is not None else {}
    records = {i: _restore_nan(r) for i, r in records.items() if i < len(samples)}
    skipped = len(records)
    to_run = [i for i in range(len(samples)) if i not in records]
    columns = ["sample", *paths, "status", "message", "warnings", "t_reached", *outputs]

    def table(complete: bool) -> SweepResult:
        rows = []
        for i in sorted(records):
            row = {"sample": i, **{p: samples[i].get(p, "") for p in paths}}
            row.update({k: v for k, v in records[i]["row"].items() if k != "sample"})
            rows.append(row)
        result = SweepResult(rows, columns, output, time.perf_counter() - start, skipped, complete, records)
        if folder is not None:
            folder.write_table(result)
        return result

    own_cluster = None
    bar = _Progress(len(samples), skipped, progress)
    batches = None
    try:
        if to_run:
            if client is None:
                client, own_cluster = _local_client(workers)
            batches = _Batches(client, job, digest, samples, to_run, outputs)
            for record in batches.records():
                if folder is not None:
                    folder.keep(record)
                record.pop("files", None)
                records[record["row"]["sample"]] = record
                bar.update(record["row"]["status"])
    except KeyboardInterrupt:
        if batches is not None:
            batches.cancel()
        bar.close()
        partial = table(complete=False)
        raise treedyn.Interrupted(
            f"sweep interrupted after {len(partial.rows)} of {len(samples)} samples"
            + (f"; run it again on {output} to finish" if output else ""),
            partial,
        ) from None
    finally:
        bar.close()
        if own_cluster is not None:
            client.close()
            own_cluster.close()
    return table(complete=True)


def run_batch(job: Dict[str, Any], items: List[tuple]) -> List[Dict[str, Any]]:
    """run_sample for each (index, overrides) of a batch, one after the other."""
    return [run_sample(job, index, overrides) for index, overrides in items]


class _Batches:
    """Feeds the samples to the cluster as tasks of one or more samples each, and yields each
    sample's record as its task ends.

    A Dask task costs the scheduler and the client a few milliseconds (6.4 ms per sample measured
    on the four-bar sweep of bench/sweep_bench.py with one sample per task), as much as a short
    run; so the first tasks hold one sample each, and later ones as many as take about
    `kTaskSeconds` at the mean time the samples took so far, never more than an even share of
    what is left (so that the last tasks still spread over the workers). About two tasks per
    worker are in flight at a time. A task whose worker died is run again by Dask (up to its
    allowed-failures); beyond that its samples are "lost"."""

    kTaskSeconds = 0.25

    def __init__(self, client, job, digest, samples, to_run, outputs):
        from distributed import as_completed

        self.client, self.samples, self.outputs = client, samples, outputs
        self.digest = f"{digest}-{uuid.uuid4().hex[:8]}"  # this call's own keys: never an earlier call's results
        self.queue = list(to_run)
        self.shared = client.submit(_job, job, key=f"treedyn-job-{digest}", pure=False)
        self.running = as_completed()
        self.items: Dict[str, List[tuple]] = {}
        self.seconds, self.timed = 0.0, 0

    def _workers(self) -> int:
        try:
            return max(1, sum(w.get("nthreads", 1) for w in self.client.scheduler_info()["workers"].values()))
        except Exception:
            return 1

    def _batch_size(self) -> int:
        if self.timed == 0:
            return 1
        mean = self.seconds / self.timed
        share = max(1, len(self.queue) // (2 * self._workers()))
        return int(min(share, max(1, self.kTaskSeconds // max(mean, 1e-6))))

    def _submit(self) -> None:
        size = self._batch_size()
        items = [(i, self.samples[i]) for i in self.queue[:size]]
        del self.queue[:size]
        key = f"treedyn-batch-{self.digest}-{items[0][0]}-{items[-1][0]}"
        self.items[key] = items
        self.running.add(self.client.submit(run_batch, self.shared, items, key=key, pure=False))

    def _fill(self) -> None:
        target = 2 * self._workers()
        while self.queue and self.running.count() < target:
            self._submit()

    def records(self):
        self._fill()
        while not self.running.is_empty():
            future = next(self.running)
            items = self.items.pop(future.key)
            try:
                batch = future.result()
            except Exception as e:  # KilledWorker beyond allowed-failures, a cancelled task
                batch = [self._lost(i, e) for i, _ in items]
            for record in batch:
                if math.isfinite(record["wall_seconds"]):
                    self.seconds += record["wall_seconds"]
                    self.timed += 1
            self._fill()
            yield from batch

    def _lost(self, index: int, error: Exception) -> Dict[str, Any]:
        row = {"sample": index, "status": "lost", "message": f"{type(error).__name__}: {error}", "warnings": "",
               "t_reached": math.nan, **{o: math.nan for o in self.outputs}}
        return {"row": row, "wall_seconds": math.nan, "worker": "", "files": None}

    def cancel(self) -> None:
        self.queue.clear()
        for future in list(self.running.futures):
            future.cancel()


# The command line ---------------------------------------------------------------------------------


def _parse_assignment(text: str, what: str):
    path, sep, value = text.partition("=")
    if not sep or not path:
        raise SystemExit(f"treedyn sweep: {what} {text!r}: expected PATH=...")
    return path, value


def _json_or_string(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _grid_axis(text: str):
    path, spec = _parse_assignment(text, "--set-grid")
    parts = spec.split(":")
    try:
        start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
        if len(parts) != 3 or count < 1 or not (math.isfinite(start) and math.isfinite(stop)):
            raise ValueError
    except (ValueError, IndexError):
        raise SystemExit(f"treedyn sweep: --set-grid {text}: expected PATH=START:STOP:COUNT (COUNT >= 1), e.g. bodies.B.mass=0.5:2:4")
    values = [start] if count == 1 else [float(x) for x in np.linspace(start, stop, count)]
    return path, values


def _random_axis(text: str):
    path, spec = _parse_assignment(text, "--set-random")
    kind, _, rest = spec.partition(":")
    kinds = {"uniform": Uniform, "normal": Normal, "loguniform": LogUniform}
    try:
        a, b = (float(x) for x in rest.split(":"))
        return path, kinds[kind](a, b)
    except (ValueError, KeyError):
        raise SystemExit(
            f"treedyn sweep: --set-random {text}: expected PATH=uniform:LOW:HIGH, PATH=normal:MEAN:STD or PATH=loguniform:LOW:HIGH"
        )


def _read_samples(path: str) -> List[Dict[str, Any]]:
    """A samples file: JSON (a list of {path: value}) or CSV (a header of paths, a row per sample)."""
    with open(path) as f:
        text = f.read()
    if path.endswith(".json"):
        samples = json.loads(text)
        if not isinstance(samples, list) or not all(isinstance(s, dict) for s in samples):
            raise SystemExit(f"treedyn sweep: {path}: expected a JSON list of {{path: value}} objects")
        return samples
    rows = list(csv.reader(io.StringIO(text)))
    if len(rows) < 2:
        raise SystemExit(f"treedyn sweep: {path}: expected a header of paths and a row per sample")
    return [{h: _json_or_string(v) for h, v in zip(rows[0], r)} for r in rows[1:] if r]


def _option_arguments(parser: argparse.ArgumentParser) -> List[str]:
    """simulate's formulation options (the library's catalogue, which checks them against the
    formulation), as --name; threads are left out (a worker is one thread: the samples are the
    parallelism)."""
    names = []
    for o in treedyn.options():
        name, kind = o["name"], o["type"]
        if name in ("dt", "threads", "min_parallel_bodies"):
            continue
        flag, dest = "--" + name.replace("_", "-"), "opt_" + name
        if kind == "flag":
            parser.add_argument(flag, dest=dest, action="store_true", default=None, help=o["description"])
        elif "|" in kind:
            parser.add_argument(flag, dest=dest, choices=kind.split("|"), default=None, help=o["description"])
        else:
            parser.add_argument(flag, dest=dest, type=int if kind == "integer" else float, default=None,
                                help=o["description"])
        names.append(name)
    return names


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # exit status 1 for a usage error, as the rest of treedyn's commands
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: {message}\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _Parser(
        prog="treedyn sweep",
        description="Run one model over a grid or random samples of its parameters, on Dask (a local "
        "cluster, or --scheduler's), and tabulate one row per sample in DIR/sweep.csv.",
    )
    parser.add_argument("model", help="model file (JSON)")
    parser.add_argument("--set-grid", action="append", default=[], metavar="PATH=START:STOP:COUNT",
                        help="a grid axis of COUNT evenly spaced values (repeatable: every combination)")
    parser.add_argument("--set-list", action="append", default=[], metavar="PATH=[V1,V2,...]",
                        help="a grid axis of the JSON list's values (vectors too: gravity=[[0,0,-9.81],[0,0,-1.62]])")
    parser.add_argument("--set-random", action="append", default=[], metavar="PATH=KIND:A:B",
                        help="a random value per sample: uniform:LOW:HIGH, normal:MEAN:STD, loguniform:LOW:HIGH (with --samples N)")
    parser.add_argument("--samples", default=None, metavar="N|FILE",
                        help="with --set-random: the number of samples; else a file of samples (CSV with a header "
                        "of paths, or a JSON list of {path: value})")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random samples (default: drawn, and recorded)")
    parser.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", help="a value every sample shares (as simulate --set)")
    parser.add_argument("-f", "--formulation", default=None, help="formulation (default: the model's, else reference)")
    parser.add_argument("--t-end", type=float, default=None, help="end time, s (default: the model's, else 10)")
    parser.add_argument("--dt", type=float, default=None, help="step or output interval, s (default: the model's, else 0.01)")
    parser.add_argument("--value", action="append", default=[], metavar="NAME", dest="outputs",
                        help="an end value per row (repeatable): a column of the run's files (qd:joint1, B.x, total), "
                        "max:/min:/mean:/absmax: before one, or a number of summary.json (steps)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="a Dask scheduler (tcp://host:8786) whose workers import treedyn; default: a local cluster")
    parser.add_argument("--workers", type=int, default=None, help="local cluster: worker processes (default: one per core)")
    parser.add_argument("--save-runs", action="store_true", help="also write each sample's files to DIR/runs/<sample>/")
    parser.add_argument("-o", "--output", default=None, help="output folder (default: results/<model name>/sweep); "
                        "a sweep started again on it skips the samples it finished")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    option_names = _option_arguments(parser)
    a = parser.parse_args(argv)

    axes: Dict[str, Any] = {}
    for text in a.set_grid:
        path, values = _grid_axis(text)
        axes[path] = values
    for text in a.set_list:
        path, spec = _parse_assignment(text, "--set-list")
        values = _json_or_string(spec)
        if not isinstance(values, list) or not values:
            raise SystemExit(f"treedyn sweep: --set-list {text}: expected PATH=[V1,V2,...], a non-empty JSON list")
        axes[path] = values
    distributions = dict(_random_axis(t) for t in a.set_random)
    n = None
    if distributions:
        if axes:
            raise SystemExit("treedyn sweep: --set-random cannot be mixed with --set-grid or --set-list")
        if a.samples is None or not a.samples.isdigit() or int(a.samples) < 1:
            raise SystemExit("treedyn sweep: --set-random needs --samples N, the number of samples")
        parameters: Any = distributions
        n = int(a.samples)
    elif a.samples is not None:
        if axes:
            raise SystemExit("treedyn sweep: a --samples file cannot be mixed with --set-grid or --set-list")
        if not os.path.exists(a.samples):
            raise SystemExit(f"treedyn sweep: --samples {a.samples}: no such file")
        parameters = _read_samples(a.samples)
    elif axes:
        parameters = axes
    else:
        raise SystemExit("treedyn sweep: nothing to vary: give --set-grid, --set-list, --set-random with --samples N, or --samples FILE")
    fixed = dict(_parse_assignment(t, "--set") for t in a.set)
    fixed = {k: _json_or_string(v) for k, v in fixed.items()}
    options = {name: getattr(a, "opt_" + name) for name in option_names if getattr(a, "opt_" + name) is not None}
    if not os.path.exists(a.model):
        raise SystemExit(f"treedyn sweep: {a.model}: no such model file")
    output = a.output
    if output is None:
        name = treedyn.load_model(a.model).name or "model"
        output = os.path.join("results", name, "sweep")

    client = None
    if a.scheduler:
        from distributed import Client

        try:
            client = Client(a.scheduler, timeout="10s")
        except OSError as e:
            raise SystemExit(f"treedyn sweep: cannot reach the scheduler {a.scheduler}: {e}")
    try:
        result = sweep(a.model, parameters, a.formulation, a.t_end, a.dt, a.outputs, client, output, a.save_runs, fixed,
                       n, a.seed, a.workers, False if a.quiet else (None if sys.stderr.isatty() else "log"), options)
    except treedyn.Interrupted as e:
        print(f"treedyn sweep: {e}", file=sys.stderr)
        return 130
    except (ValueError, TypeError, FileNotFoundError) as e:
        print(f"treedyn sweep: {e}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
    counts = result.counts()
    if not a.quiet:
        done = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        print(f"sweep of {len(result)} samples: {done}" + (f" ({result.skipped} done earlier)" if result.skipped else "")
              + f"; {result.wall_seconds:.1f} s")
        not_ok = [r for r in result.rows if r["status"] != "ok"]
        for r in not_ok[:10]:
            print(f"  sample {r['sample']}: {r['status']}: {r['message']}")
        if len(not_ok) > 10:
            print(f"  and {len(not_ok) - 10} more: see sweep.csv")
        print(f"wrote {os.path.join(output, 'sweep.csv')}")
    return 0 if result.ok else 2
