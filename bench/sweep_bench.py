"""Sweep throughput on Dask (issue 29's target): N samples of the four-bar (models/four_bar.json,
ali3 as in paper 000, t_end 2 s, a grid over the coupler's and the rocker's masses), run

  serial    in this process, one after the other: model_from_json with the sample's overrides,
            then simulate (the work itself, no Dask);
  1 worker  treedyn.sweep on a LocalCluster of one single-threaded worker process;
  2 workers the same with two.

The clusters are started before the clock starts and each worker has imported treedyn (their start-up,
about 1-2 s, is reported apart). Overhead per sample = (1-worker wall - serial wall) / N: what Dask, the client's records
and the result's transfer add to each sample. Speed-up = 1-worker wall / 2-worker wall.

    PYTHONPATH=build/python python3 bench/sweep_bench.py [N [ROUNDS]]

Both clusters are started first and the sweeps alternate between them, ROUNDS times (default 3);
the medians are reported.
"""

import os
import statistics
import sys
import tempfile
import time

import numpy as np

import treedyn
from treedyn import sweeps

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "four_bar.json")


def _warm_up():
    import treedyn.sweeps  # noqa: F401


def _serial(text, samples):
    start = time.perf_counter()
    for s in samples:
        treedyn.simulate(treedyn.model_from_json(text, s), "ali3", t_end=2.0)
    return time.perf_counter() - start


def _machine_ceiling(text, samples):
    """Two processes each running half the samples serially at once, against one running them
    all: what this machine's cores give two workers at best."""
    import multiprocessing

    half = samples[: len(samples) // 2]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.starmap(_serial, [(text, half[:8])] * 2)  # imports done
        start = time.perf_counter()
        pool.starmap(_serial, [(text, half), (text, half)])
        return time.perf_counter() - start


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    side = int(round(np.sqrt(n)))
    masses = list(np.linspace(0.5, 3.0, side))
    axes = {"bodies.B.mass": masses, "bodies.C.mass": masses}
    samples = sweeps.grid(axes)
    with open(MODEL) as f:
        text = f.read()

    serial = _serial(text, samples)
    both = _machine_ceiling(text, samples)

    from distributed import Client, LocalCluster

    clients, walls, in_task = {}, {1: [], 2: []}, {1: [], 2: []}
    for workers in (1, 2):
        started = time.perf_counter()
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=40, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        clients[workers] = (Client(cluster), cluster)
        clients[workers][0].run(_warm_up)  # each worker imports treedyn once (a user's first sweep pays it too)
        print(f"{workers}-worker cluster started in {time.perf_counter() - started:.2f} s")
    for _ in range(rounds):  # interleaved: this VM's speed drifts between runs
        for workers in (1, 2):
            with tempfile.TemporaryDirectory() as out:
                result = treedyn.sweep(MODEL, axes, "ali3", t_end=2.0, outputs=["qd:joint1.angle"],
                                       client=clients[workers][0], output=out, progress=False)
            assert result.ok and len(result) == len(samples)
            walls[workers].append(result.wall_seconds)
            in_task[workers].append(sum(r["wall_seconds"] for r in result.records.values()))
    for workers in (1, 2):
        wall = statistics.median(walls[workers])
        print(f"{workers} worker(s): {wall:.2f} s wall for {len(samples)} samples, median of {rounds} "
              f"({len(samples) / wall:.1f} samples/s; time inside the tasks {statistics.median(in_task[workers]):.2f} s)")
        clients[workers][0].close()
        clients[workers][1].close()
    walls = {w: statistics.median(v) for w, v in walls.items()}
    per_sample = serial / len(samples)
    print(f"serial in-process: {serial:.2f} s ({per_sample * 1e3:.2f} ms per sample)")
    print(f"overhead per sample (1 worker - serial) / N: {(walls[1] - serial) / len(samples) * 1e3:.2f} ms")
    print(f"throughput, 2 workers over 1: {walls[1] / walls[2]:.2f}x (this machine's ceiling: two processes "
          f"each running half serially at once, {serial / both:.2f}x over one running all)")
    print(f"machine: {os.cpu_count()} logical CPUs, {len(os.sched_getaffinity(0))} usable")


if __name__ == "__main__":
    main()
