"""Sweeps on Dask (treedyn.sweep, treedyn sweep): the same table whatever runs it, every sample
reported through worker deaths and failures, resumption, and the errors that name the problem.

Each sample is checked against an independent run: the same model with the same overrides run by
treedyn.simulate in this process, whose end values a sweep row must equal bit for bit (a sweep
adds nothing to a run's numbers)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import treedyn
from treedyn import sweeps

import distributed  # noqa: E402  (scripts/install-deps.sh installs python3-distributed; its absence fails these tests)

T_END = 0.5
AXES = {"bodies.B.mass": [1.0, 2.0], "bodies.C.mass": [0.5, 1.5]}
OUTPUTS = ["qd:joint1.angle", "max:position_error", "steps"]


def package_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(treedyn.__file__)))


def worker_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = package_dir() + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


class ExternalCluster:
    """A scheduler and worker processes on localhost, started and stopped as a user would (the
    dask-scheduler and dask-worker commands, through this interpreter)."""

    def __init__(self, tmp_path, workers=2, nanny=False):
        self.file = str(tmp_path / "scheduler.json")
        quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=worker_env())
        self.scheduler = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--scheduler-file", self.file, "--port", "0",
             "--no-dashboard", "--dashboard-address", "127.0.0.1:0"], **quiet)
        self.workers = [
            subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", self.file, "--nthreads", "1",
                 "--no-dashboard", "--nanny" if nanny else "--no-nanny"], **quiet)
            for _ in range(workers)
        ]
        self.client = distributed.Client(scheduler_file=self.file, timeout="30s")
        self.client.wait_for_workers(workers, timeout=60)

    def close(self):
        self.client.close()
        for p in [*self.workers, self.scheduler]:
            if p.poll() is None:
                p.terminate()
        for p in [*self.workers, self.scheduler]:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def records_in(folder) -> int:
    """Samples a sweep has recorded in `folder` so far."""
    log = folder / "samples.jsonl"
    return log.read_text().count("\n") if log.exists() else 0


@pytest.fixture
def external(tmp_path):
    cluster = ExternalCluster(tmp_path)
    yield cluster
    cluster.close()


def expected_row(four_bar_text, overrides):
    """The row's numbers from a run in this process, as an independent check."""
    result = treedyn.simulate(treedyn.model_from_json(four_bar_text, overrides), t_end=T_END)
    return {
        "qd:joint1.angle": float(result.column("qd:joint1.angle")[-1]),
        "max:position_error": float(np.max(result.position_error)),
        "steps": float(result.summary["steps"]),
    }


@pytest.fixture(scope="module")
def four_bar_text():
    with open(os.path.join(os.environ.get("TREEDYN_MODELS_DIR", "models"), "four_bar.json")) as f:
        return f.read()


def test_grid_is_every_combination_last_path_fastest():
    assert sweeps.grid({"a": [1, 2], "b": [[0, 1], [1, 0]]}) == [
        {"a": 1, "b": [0, 1]}, {"a": 1, "b": [1, 0]}, {"a": 2, "b": [0, 1]}, {"a": 2, "b": [1, 0]}]


def test_random_samples_are_reproducible_from_the_seed_and_follow_their_distribution():
    d = {"m": treedyn.Uniform(1.0, 2.0), "k": treedyn.Normal(10.0, 0.5), "c": treedyn.Choice(("x", "y"))}
    a, b = sweeps.random_samples(d, 2000, seed=7), sweeps.random_samples(d, 2000, seed=7)
    assert a == b and a != sweeps.random_samples(d, 2000, seed=8)
    m = np.array([s["m"] for s in a])
    k = np.array([s["k"] for s in a])
    assert m.min() >= 1.0 and m.max() < 2.0
    # 2000 draws: the sample mean is within 4 standard errors of the true one
    assert abs(m.mean() - 1.5) < 4 * (1 / np.sqrt(12)) / np.sqrt(2000)
    assert abs(k.mean() - 10.0) < 4 * 0.5 / np.sqrt(2000) and abs(k.std() - 0.5) < 0.05
    assert {s["c"] for s in a} == {"x", "y"}


def test_a_local_cluster_and_a_separate_scheduler_give_the_same_table_and_each_row_is_its_run(
        tmp_path, external, models_dir, four_bar_text):
    model = models_dir / "four_bar.json"
    local = treedyn.sweep(model, AXES, t_end=T_END, outputs=OUTPUTS, workers=2, output=str(tmp_path / "local"),
                          progress=False)
    remote = treedyn.sweep(model, AXES, t_end=T_END, outputs=OUTPUTS, client=external.client,
                           output=str(tmp_path / "remote"), progress=False)
    assert local.ok and remote.ok and len(local) == 4
    a, b = (tmp_path / "local" / "sweep.csv").read_text(), (tmp_path / "remote" / "sweep.csv").read_text()
    assert a == b
    assert a.splitlines()[0] == "sample,bodies.B.mass,bodies.C.mass,status,message,warnings,t_reached," + ",".join(OUTPUTS)
    ran_on = {r["worker"] for r in remote.records.values()}
    assert ran_on <= set(external.client.scheduler_info()["workers"]), "the separate cluster's workers ran them"
    for row, overrides in zip(local.rows, sweeps.grid(AXES)):
        assert {k: row[k] for k in overrides} == overrides
        assert row["t_reached"] == T_END
        assert {k: row[k] for k in OUTPUTS} == expected_row(four_bar_text, overrides)


def test_a_worker_killed_during_a_sweep_loses_no_sample(tmp_path, external, models_dir, four_bar_text):
    axes = {"bodies.B.mass": list(np.linspace(0.5, 2.0, 6)), "bodies.C.mass": [0.5, 1.0]}
    out = tmp_path / "killed"
    box = {}

    def run():
        box["result"] = treedyn.sweep(models_dir / "four_bar.json", axes, t_end=2.0, outputs=["qd:joint1.angle"],
                                      client=external.client, output=str(out), progress=False)

    runner = threading.Thread(target=run)
    runner.start()
    deadline = time.monotonic() + 120
    while records_in(out) < 2:
        assert time.monotonic() < deadline and runner.is_alive(), "the sweep did not start"
        time.sleep(0.01)
    external.workers[0].send_signal(signal.SIGKILL)  # mid-sweep: samples still to run, some on this worker
    runner.join(timeout=300)
    result = box["result"]
    assert len(result) == 12 and result.ok, result.rows
    assert external.workers[0].wait(timeout=10) == -signal.SIGKILL
    for row, overrides in list(zip(result.rows, sweeps.grid(axes)))[::5]:  # a few checked against their own run
        run = treedyn.simulate(treedyn.model_from_json(four_bar_text, overrides), t_end=2.0)
        assert row["qd:joint1.angle"] == float(run.column("qd:joint1.angle")[-1])


def test_a_failing_sample_is_a_row_that_says_so_and_the_others_complete(tmp_path, models_dir):
    result = treedyn.sweep(models_dir / "four_bar.json", {"bodies.B.mass": [1.0, -1.0, 2.0]}, t_end=T_END,
                           outputs=["qd:joint1.angle"], workers=2, output=str(tmp_path / "f"), progress=False)
    assert [r["status"] for r in result.rows] == ["ok", "failed", "ok"]
    assert not result.ok and result.counts()["failed"] == 1
    assert "mass must be positive" in result.rows[1]["message"] and "bodies.B.mass=-1" in result.rows[1]["message"]
    assert np.isnan(result.rows[1]["qd:joint1.angle"]) and np.isfinite(result.rows[2]["qd:joint1.angle"])
    text = (tmp_path / "f" / "sweep.csv").read_text().splitlines()
    assert text[2].startswith("1,-1.0,failed,") and "mass must be positive" in text[2]


def test_a_run_that_fails_is_failed_with_its_time_and_a_python_error_is_error(four_bar_text):
    job = dict(model=four_bar_text, formulation="half-implicit", t_end=1.0, dt=0.5, options={"newton_max": 1},
               outputs=["qd:joint1.angle"], fixed={}, save_runs=False, source="four_bar.json")
    failed = sweeps.run_sample(job, 0, {})["row"]
    assert failed["status"] == "failed" and failed["message"] and failed["t_reached"] < 1.0
    error = sweeps.run_sample({**job, "outputs": ["no such column"], "formulation": "dca", "options": {}}, 1, {})["row"]
    assert error["status"] == "error" and "no such column" in error["message"]


def test_a_sweep_started_again_skips_the_finished_samples(tmp_path, models_dir):
    out = tmp_path / "resume"
    args = dict(t_end=T_END, outputs=OUTPUTS, workers=1, output=str(out), progress=False)
    first = treedyn.sweep(models_dir / "four_bar.json", AXES, **args)
    table = (out / "sweep.csv").read_text()
    lines = (out / "samples.jsonl").read_text().splitlines(keepends=True)
    kept = [x for x in lines if json.loads(x)["row"]["sample"] not in (1, 2)]  # as if stopped before these two
    (out / "samples.jsonl").write_text("".join(kept) + '{"row": {"sample": 1, "sta')  # and cut mid-line
    again = treedyn.sweep(models_dir / "four_bar.json", AXES, **args)
    assert again.skipped == 2 and again.ok
    assert (out / "sweep.csv").read_text() == table
    assert [r["sample"] for r in again.rows] == [r["sample"] for r in first.rows]
    with pytest.raises(ValueError, match="holds another sweep .*t_end"):
        treedyn.sweep(models_dir / "four_bar.json", AXES, **{**args, "t_end": 1.0})


def test_save_runs_writes_each_samples_files_as_simulate_does(tmp_path, models_dir):
    out = tmp_path / "runs"
    treedyn.sweep(models_dir / "four_bar.json", {"bodies.B.mass": [2.0]}, t_end=T_END, workers=1, output=str(out),
                  save_runs=True, progress=False)
    saved = treedyn.load_result(str(out / "runs" / "000000"))
    direct = treedyn.simulate(treedyn.load_model(models_dir / "four_bar.json", {"bodies.B.mass": 2.0}), t_end=T_END)
    direct.save(str(tmp_path / "direct"))
    for name in ("trajectory.csv", "metrics.csv", "joints.csv"):
        assert (out / "runs" / "000000" / name).read_text() == (tmp_path / "direct" / name).read_text()
    assert saved.status == "ok"


def test_errors_name_the_path_the_output_or_the_option_before_anything_runs(models_dir):
    model = models_dir / "four_bar.json"
    with pytest.raises(treedyn.ModelError, match="four_bar.json: override bodies.crank.mass: no body named 'crank'"):
        treedyn.sweep(model, {"bodies.crank.mass": [1, 2]}, progress=False)
    with pytest.raises(ValueError, match="output 'qd:crank'"):
        treedyn.sweep(model, {"bodies.B.mass": [1, 2]}, outputs=["qd:crank"], progress=False)
    with pytest.raises(ValueError, match="alpha"):
        treedyn.sweep(model, {"bodies.B.mass": [1, 2]}, formulation="dca", options={"alpha": 1e6}, progress=False)
    with pytest.raises(ValueError, match="distributions need n"):
        treedyn.sweep(model, {"bodies.B.mass": treedyn.Uniform(1, 2)}, progress=False)
    with pytest.raises(ValueError, match="a grid axis needs a list"):
        treedyn.sweep(model, {"bodies.B.mass": 2.0}, progress=False)


def test_the_command_line_sweeps_stops_on_ctrl_c_and_finishes_when_run_again(tmp_path, treedyn_binary, models_dir):
    out = tmp_path / "cli"
    command = [treedyn_binary, "sweep", str(models_dir / "four_bar.json"), "--set-grid", "bodies.B.mass=0.5:2:8",
               "--set-list", "bodies.C.mass=[0.5,1.0]", "--t-end", "2", "--value", "qd:joint1.angle", "--workers", "1", "-o", str(out)]
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while records_in(out) < 2:
        assert time.monotonic() < deadline and p.poll() is None, p.communicate()
        time.sleep(0.01)
    os.killpg(p.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group, as from a terminal
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 130, stderr
    assert "interrupted" in stderr and "run it again" in stderr
    partial = (out / "sweep.csv").read_text().splitlines()
    assert 1 <= len(partial) - 1 < 16
    finished = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    assert "16 ok" in finished.stdout and "done earlier" in finished.stdout
    rows = (out / "sweep.csv").read_text().splitlines()
    assert len(rows) == 17 and set(partial[1:]) <= set(rows[1:])  # the rows done before Ctrl-C, unchanged
    # A bad grid is refused with the form it expects.
    bad = subprocess.run([treedyn_binary, "sweep", str(models_dir / "four_bar.json"), "--set-grid", "bodies.B.mass=1:2"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "PATH=START:STOP:COUNT" in bad.stderr
