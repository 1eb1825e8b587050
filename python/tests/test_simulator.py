"""The stepping API from Python: state as NumPy arrays, inputs, load functions written in Python,
and errors as Python exceptions."""

import math
import os
import signal
import threading

import numpy as np
import pytest

import treedyn
from conftest import FIXED_STEP


def test_state_arrays_have_the_documented_shapes_and_dtypes(four_bar):
    sim = treedyn.Simulator(four_bar, "hdca", integrator="rk4", dt=1e-3)
    assert sim.time == 0.0
    for array, shape in [
        (sim.q, (4,)),
        (sim.qd, (4,)),
        (sim.body_poses, (3, 7)),
        (sim.body_twists, (3, 6)),
        (sim.effort, (4,)),
        (sim.accelerations, (3, 6)),
        (sim.reactions, (4, 6)),
    ]:
        assert array.shape == shape
        assert array.dtype == np.float64
    assert sim.q_names == ["joint1.angle", "joint2.angle", "joint3.angle", "joint4.angle"]
    np.testing.assert_allclose(sim.body_poses[0, :3], four_bar.bodies[0]["position"])


def test_arrays_own_their_data(four_bar):
    sim = treedyn.Simulator(four_bar, "dca", integrator="rk4", dt=1e-3)
    poses = sim.body_poses
    q = sim.q
    q[0] = 123.0  # a copy: the simulator does not change
    assert sim.q[0] != 123.0
    del sim
    import gc

    gc.collect()
    assert np.isfinite(poses).all() and poses.shape == (3, 7)  # still valid after its simulator went


def test_step_takes_the_fixed_step_and_advance_to_lands_on_time(double_pendulum):
    fixed = treedyn.Simulator(double_pendulum, "dca", integrator="rk4", dt=1e-3)
    assert fixed.step() == pytest.approx(1e-3)
    adaptive = treedyn.Simulator(double_pendulum, "dca", integrator="dopri5")
    adaptive.advance_to(0.37)
    assert adaptive.time == 0.37
    assert adaptive.stats["steps"] > 0
    assert set(adaptive.stats) == {"steps", "rhs_evaluations", "newton_iterations", "projections", "rejected_steps"}
    assert adaptive.stats["rejected_steps"] >= 0


def test_reset_returns_to_the_initial_state(double_pendulum):
    sim = treedyn.Simulator(double_pendulum, "hdca", integrator="rk4", dt=1e-3)
    start = sim.body_poses
    for _ in range(50):
        sim.step()
    assert not np.array_equal(sim.body_poses, start)
    sim.reset()
    assert sim.time == 0.0
    np.testing.assert_array_equal(sim.body_poses, start)


def test_set_state_round_trip(double_pendulum):
    sim = treedyn.Simulator(double_pendulum, "dca", integrator="rk4", dt=1e-3)
    for _ in range(100):
        sim.step()
    q, qd = sim.q, sim.qd
    other = treedyn.Simulator(double_pendulum, "dca", integrator="rk4", dt=1e-3)
    other.set_state(q, qd)
    np.testing.assert_allclose(other.q, q, atol=1e-12)
    np.testing.assert_allclose(other.qd, qd, atol=1e-12)
    np.testing.assert_allclose(other.body_poses, sim.body_poses, atol=1e-12)


def test_a_state_breaking_the_loop_is_refused_or_projected(four_bar):
    sim = treedyn.Simulator(four_bar, "hdca", integrator="rk4", dt=1e-3)
    q = sim.q
    q[1] += 0.2
    with pytest.raises(ValueError, match="violates the constraints") as e:
        sim.set_state(q, sim.qd)
    assert "project=True" in str(e.value)
    sim.set_state(q, sim.qd, project=True)
    assert sim.constraint_errors["position"] < 1e-8


def test_body_states_round_trip(double_pendulum):
    sim = treedyn.Simulator(double_pendulum, "reference", integrator="rk4", dt=1e-3)
    for _ in range(20):
        sim.step()
    poses, twists = sim.body_poses, sim.body_twists
    other = treedyn.Simulator(double_pendulum, "reference", integrator="rk4", dt=1e-3)
    other.set_body_states(poses, twists)
    np.testing.assert_allclose(other.body_poses, poses, atol=1e-12)


def test_bad_inputs_raise_value_errors_naming_the_item(four_bar):
    sim = treedyn.Simulator(four_bar, "dca", integrator="rk4", dt=1e-3)
    with pytest.raises(ValueError, match="expected 4 values"):
        sim.effort = np.zeros(3)
    with pytest.raises(ValueError, match="joint1.angle"):
        sim.effort = np.array([math.nan, 0, 0, 0])
    with pytest.raises(ValueError, match="'joint9'"):
        sim.set_joint_effort("joint9", [1.0])
    with pytest.raises(ValueError, match="'Z'"):
        sim.set_body_wrench("Z", [0, 0, 1])
    with pytest.raises(ValueError, match="expected 4 values"):
        sim.set_state(np.zeros(2), sim.qd)
    with pytest.raises(ValueError, match="not after"):
        sim.advance_to(-1.0)
    np.testing.assert_array_equal(sim.effort, np.zeros(4))


def test_unknown_and_inapplicable_options_raise(four_bar):
    with pytest.raises(ValueError, match="unknown option speed"):
        treedyn.Simulator(four_bar, "dca", speed=2)
    with pytest.raises(ValueError, match="does not apply to ali3"):
        treedyn.Simulator(four_bar, "ali3", integrator="rk4")
    with pytest.raises(ValueError, match="alpha"):
        treedyn.Simulator(four_bar, "ali3", alpha=-1.0)
    with pytest.raises(ValueError, match="unknown formulation"):
        treedyn.Simulator(four_bar, "nope")


def test_a_failed_step_raises_simulation_failed_with_its_time(double_pendulum):
    sim = treedyn.Simulator(double_pendulum, "dca", integrator="euler", dt=0.3)
    with pytest.raises(treedyn.SimulationFailed) as e:
        for _ in range(400):
            sim.step()
    assert e.value.time > 0
    assert isinstance(e.value, RuntimeError)
    assert sim.failed
    with pytest.raises(RuntimeError, match="reset"):
        sim.step()
    sim.reset()
    sim.step()


@pytest.mark.parametrize("formulation", list(FIXED_STEP))
def test_a_pd_controller_in_python_holds_the_pendulum(pendulum, formulation):
    kp, kd, target = 50.0, 10.0, 0.8
    sim = treedyn.Simulator(pendulum.model(), formulation, **FIXED_STEP[formulation])
    while sim.time < 6.0 - 1e-9:
        q, qd = sim.q[0], sim.qd[0]
        sim.set_joint_effort("pin", [kp * (target - q) - kd * qd])
        sim.step()
    # the static equilibrium of the controller against gravity, solved independently
    assert sim.q[0] == pytest.approx(pendulum.equilibrium(kp, target), abs=1e-6)
    assert abs(sim.qd[0]) < 1e-5


def test_a_python_load_function_moves_as_the_models_spring(pendulum):
    k, c = 20.0, 0.7
    element = treedyn.Simulator(pendulum.model(k, c), "hdca", integrator="rk4", dt=1e-3)
    function = treedyn.Simulator(pendulum.model(), "hdca", integrator="rk4", dt=1e-3)
    function.set_load_function(lambda t, q, qd: np.array([-k * q[0] - c * qd[0]]))
    element.advance_to(2.0)
    function.advance_to(2.0)
    assert function.q[0] == pytest.approx(element.q[0], abs=1e-10)


def test_a_load_function_can_return_body_wrenches(double_pendulum):
    n = len(double_pendulum.body_names)
    pushed = treedyn.Simulator(double_pendulum, "reference", integrator="rk4", dt=1e-3)
    held = treedyn.Simulator(double_pendulum, "reference", integrator="rk4", dt=1e-3)
    wrench = np.zeros((n, 6))
    wrench[-1, :3] = [0, 0, 5.0]
    pushed.set_load_function(lambda t, q, qd: (None, wrench))
    held.set_body_wrench(double_pendulum.body_names[-1], [0, 0, 5.0])
    pushed.advance_to(0.5)
    held.advance_to(0.5)
    np.testing.assert_allclose(pushed.body_poses, held.body_poses, atol=1e-12)


def test_a_load_function_that_raises_raises_its_own_exception(pendulum):
    sim = treedyn.Simulator(pendulum.model(), "dca", integrator="rk4", dt=1e-3)

    def broken(t, q, qd):
        raise KeyError("no such sensor")

    sim.set_load_function(broken)
    with pytest.raises(KeyError, match="no such sensor"):
        sim.step()


def test_a_load_function_of_the_wrong_size_is_an_error(pendulum):
    sim = treedyn.Simulator(pendulum.model(), "dca", integrator="rk4", dt=1e-3)
    sim.set_load_function(lambda t, q, qd: np.zeros(3))
    with pytest.raises(treedyn.SimulationFailed, match="3 efforts, not 1"):
        sim.step()


def test_reactions_energies_and_constraint_errors(four_bar):
    sim = treedyn.Simulator(four_bar, "hdca", integrator="rk4", dt=1e-3)
    force, torque = sim.reaction("joint1")
    assert force.shape == (3,) and torque.shape == (3,)
    np.testing.assert_allclose(sim.reactions[0, :3], force)
    e = sim.energy
    assert e["total"] == pytest.approx(e["kinetic"] + e["potential"])
    assert sim.constraint_errors["position"] < 1e-6


def test_simulators_sharing_a_model_run_on_python_threads(double_pendulum):
    def run(out, i):
        sim = treedyn.Simulator(double_pendulum, "dca", integrator="dopri5")
        sim.advance_to(1.0)  # the GIL is released meanwhile
        out[i] = sim.body_poses

    alone = [None]
    run(alone, 0)
    out = [None] * 4
    threads = [threading.Thread(target=run, args=(out, i)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for poses in out:
        np.testing.assert_array_equal(poses, alone[0])


def test_a_stepping_loop_judges_its_state(four_bar):
    """Simulator.check judges the state now as a whole run judges its samples: ok after a second
    of ali3, a warning naming the check for an energy far from energy0 or a stricter threshold."""
    sim = treedyn.Simulator(four_bar, "ali3", dt=0.01)
    energy0 = sim.energy["total"]
    for _ in range(100):
        sim.step()
    ok = sim.check(energy0)
    assert ok["status"] == "ok", ok["message"]
    assert [c["name"] for c in ok["checks"]] == ["energy", "position", "velocity", "quaternion"]
    assert ok["checks"][1]["value"] == sim.constraint_errors["position"]
    drifted = sim.check(energy0 + 1e3)
    assert drifted["status"] == "warning" and "energy drift since energy0" in drifted["message"]
    strict = sim.check(checks={"velocity": 1e-30})
    assert strict["status"] == "warning" and "velocity constraint error" in strict["message"]
    with pytest.raises(ValueError, match="energy0 must be a finite energy"):
        sim.check(float("nan"))
    with pytest.raises(ValueError, match="no check named 'speed'"):
        sim.check(checks={"speed": 1.0})


def test_ctrl_c_stops_a_long_advance_to_and_the_simulator_goes_on_from_where_it_was(models_dir):
    # One advance_to of 1000 s of the 128-link chain takes a minute: Ctrl-C is heard inside it
    # (before each right-hand side), not after it, and the simulator stays at the time it had.
    sim = treedyn.Simulator(treedyn.load_model(str(models_dir / "chain128.json")), "dca")
    sim.advance_to(0.1)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sim.advance_to(1000.0)
    finally:
        timer.cancel()
    # Raised inside advance_to, not by Python after it returned (which would leave t = 1000).
    assert sim.time == 0.1 and not sim.failed
    sim.advance_to(0.2)
    assert sim.time == 0.2
