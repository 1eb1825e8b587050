"""The largest difference between the sampled bodies of two runs of the same model and sampling,
after the first row: positions (m), quaternions, and velocities, linear and angular (m/s, rad/s).
Used to compare outputs against a run at tight tolerances (docs/benchmarks.md, "Session 36"):

    build/treedyn simulate M -f dca --t-end 2 --rtol 1e-11 --atol 1e-11 --no-estimate-error -q -o /tmp/ref
    build/treedyn simulate M -f dca --t-end 2 --no-estimate-error -q -o /tmp/run
    PYTHONPATH=build/python python3 bench/output_difference.py /tmp/ref /tmp/run [more runs...]
"""

import sys

import numpy as np

import treedyn


def differences(reference, run):
    if reference.t.shape != run.t.shape or np.abs(reference.t - run.t).max() > 1e-12:
        raise SystemExit("the runs were not sampled at the same times")
    pose = np.abs(run.poses[1:] - reference.poses[1:])
    twist = np.abs(run.twists[1:] - reference.twists[1:])
    return pose[..., :3].max(), pose[..., 3:].max(), twist.max()


def main(args):
    if len(args) < 2:
        raise SystemExit(__doc__)
    reference = treedyn.load_result(args[0])
    for path in args[1:]:
        position, quaternion, velocity = differences(reference, treedyn.load_result(path))
        print(f"{path}: position {position:.3e} m, quaternion {quaternion:.3e}, velocity {velocity:.3e}")


if __name__ == "__main__":
    main(sys.argv[1:])
