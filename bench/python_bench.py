"""Python's own cost over the C++ library (issue 26's targets), measured in one process with the
C++ and the Python runs of the same work interleaved (this VM's speed drifts by 10-20 % between
separate runs, more than the differences measured):

  step      Simulator.step() from Python on a 7-joint revolute chain (dca, rk4, dt 1e-3) against
            the same simulator stepped by a C++ loop (_treedyn._cpp_steps), per step.
  simulate  treedyn.simulate of chain128 (dca, rk4, dt 1e-3, 1 s, a sample every 10 steps, no
            files) against the same run in C++ (_treedyn._cpp_run: a Simulator made and
            run_simulation into a Recording), wall time.
  load      a Python load function on the 7-joint chain (rk4: 4 calls a step): step() with none,
            with one returning None, and with a NumPy PD law (-5 q - 0.5 qd), per call.

    PYTHONPATH=build/python taskset -c 0 python3 bench/python_bench.py
"""

import statistics
import time

import treedyn
from treedyn import _treedyn


def chain(n, joint):
    b = treedyn.ModelBuilder(f"chain{n}")
    b.gravity([0, -9.81, 0])
    for i in range(n):
        b.body(f"link{i + 1}", mass=1.0, inertia=1.0, position=[i + 0.5, 0, 0])
        b.joint(f"joint{i + 1}", joint, "ground" if i == 0 else f"link{i}", f"link{i + 1}", location=[i, 0, 0])
    return b.build()


def steps(rounds=15, n=20000):
    sim = treedyn.Simulator(chain(7, "revolute"), "dca", integrator="rk4", dt=1e-3)
    cpp, python = [], []
    for _ in range(rounds):
        sim.reset()
        cpp.append(_treedyn._cpp_steps(sim, n) / n)
        sim.reset()
        start = time.perf_counter()
        for _ in range(n):
            sim.step()
        python.append((time.perf_counter() - start) / n)
    return cpp, python


def runs(rounds=7):
    model = chain(128, "spherical")
    options = {"integrator": "rk4"}
    cpp, python = [], []
    for _ in range(rounds):
        cpp.append(_treedyn._cpp_run(model, "dca", 1.0, 1e-3, 10, options))
        start = time.perf_counter()
        treedyn.simulate(model, "dca", t_end=1.0, dt=1e-3, sample_every=10, **options)
        python.append(time.perf_counter() - start)
    return cpp, python


def load_functions(rounds=9, n=5000):
    laws = {"none": None, "returns None": lambda t, q, qd: None, "PD law": lambda t, q, qd: -5.0 * q - 0.5 * qd}
    times = {name: [] for name in laws}
    model = chain(7, "revolute")
    for _ in range(rounds):
        for name, law in laws.items():
            sim = treedyn.Simulator(model, "dca", integrator="rk4", dt=1e-3)
            if law is not None:
                sim.set_load_function(law)
            start = time.perf_counter()
            for _ in range(n):
                sim.step()
            times[name].append((time.perf_counter() - start) / n)
    base = statistics.median(times["none"])
    for name in ("returns None", "PD law"):
        print(f"load function ({name}), 7-joint chain, rk4: {(statistics.median(times[name]) - base) / 4 * 1e6:.2f} us per call "
              f"(step {statistics.median(times[name]) * 1e6:.2f} us against {base * 1e6:.2f} us without)")


def report(what, unit, scale, cpp, python):
    differences = [p - c for c, p in zip(cpp, python)]
    ratios = [p / c for c, p in zip(cpp, python)]
    print(f"{what}: C++ {statistics.median(cpp) * scale:.3f} {unit}, Python {statistics.median(python) * scale:.3f} {unit}; "
          f"difference median {statistics.median(differences) * scale:.3f} {unit} "
          f"(range {min(differences) * scale:.3f} to {max(differences) * scale:.3f}), "
          f"ratio median {statistics.median(ratios):.4f}")


if __name__ == "__main__":
    report("step, 7-joint revolute chain, per step", "us", 1e6, *steps())
    report("simulate, chain128, 1 s", "ms", 1e3, *runs())
    load_functions()
