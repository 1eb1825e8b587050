"""Fixtures of the Python tests: where the models and the command-line tool are (CTest sets
TREEDYN_MODELS_DIR and TREEDYN_BINARY; run by hand from the repository they default to
models/ and build/treedyn)."""

import math
import os
import pathlib

import pytest

import treedyn

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def models_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("TREEDYN_MODELS_DIR", ROOT / "models"))


@pytest.fixture(scope="session")
def treedyn_binary() -> str:
    return os.environ.get("TREEDYN_BINARY", str(ROOT / "build" / "treedyn"))


@pytest.fixture
def four_bar(models_dir):
    return treedyn.load_model(str(models_dir / "four_bar.json"))


@pytest.fixture
def double_pendulum(models_dir):
    return treedyn.load_model(str(models_dir / "spatial_double_pendulum.json"))


class Pendulum:
    """A uniform link (mass m, length L) hanging from a pin at the origin, axis z, released theta0
    from the downward vertical; gravity -g along y. Joint angle 0 is theta0."""

    m, L, g, theta0 = 1.0, 1.0, 9.81, 0.3

    def model(self, spring=0.0, damper=0.0):
        b = treedyn.ModelBuilder("pendulum")
        b.gravity([0, -self.g, 0])
        c, s = math.cos(self.theta0 / 2), math.sin(self.theta0 / 2)
        b.body(
            "link",
            mass=self.m,
            inertia=self.m * self.L**2 / 12,
            position=[0.5 * self.L * math.sin(self.theta0), -0.5 * self.L * math.cos(self.theta0), 0],
            orientation=[c, 0, 0, s],
        )
        b.joint("pin", "revolute", "ground", "link", location=[0, 0, 0])
        if spring or damper:
            b.rotational_spring_damper("spring", "pin", stiffness=spring, damping=damper)
        return b.build()

    def equilibrium(self, kp, target):
        """The joint angle where kp (target - q) balances gravity's torque m g L/2 sin(theta0 + q)."""
        q = target
        for _ in range(50):
            f = kp * (target - q) - self.m * self.g * 0.5 * self.L * math.sin(self.theta0 + q)
            df = -kp - self.m * self.g * 0.5 * self.L * math.cos(self.theta0 + q)
            q -= f / df
        return q


@pytest.fixture
def pendulum():
    return Pendulum()


FIXED_STEP = {
    "reference": dict(integrator="rk4", dt=1e-3),
    "dca": dict(integrator="rk4", dt=1e-3),
    "hdca": dict(integrator="rk4", dt=1e-3),
    "ali3": dict(dt=1e-3, alpha=1e9),
    "half-implicit": dict(dt=1e-3),
    "fully-implicit": dict(dt=1e-3),
}
