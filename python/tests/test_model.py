"""Models from Python: reading, building, their info, and the errors that name the problem."""

import json

import numpy as np
import pytest

import treedyn


def test_load_model_reads_a_json_model(four_bar):
    assert four_bar.name == "four_bar"
    assert four_bar.body_names == ["A", "B", "C"]
    assert four_bar.joint_names == ["joint1", "joint2", "joint3", "joint4"]
    np.testing.assert_array_equal(four_bar.gravity, [0, -9.81, 0])
    assert four_bar.bodies[0]["mass"] == 1.0
    assert four_bar.defaults["t_end"] == 30.0


def test_info_gives_mobility_redundancy_and_loops(four_bar):
    info = four_bar.info()
    assert info["mobility"] == 1  # paper 000's four-bar: one degree of freedom
    assert info["redundant_constraints"] == 3  # a planar loop of spatial revolute joints
    assert info["loop_joints"] == ["joint3"]
    assert info["initial_state_consistent"]
    assert [j["type"] for j in info["joints"]] == ["revolute"] * 4


def test_a_missing_file_is_file_not_found_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        treedyn.load_model(tmp_path / "nowhere.json")
    assert "nowhere.json" in str(e.value)


def test_a_model_error_is_a_value_error_with_the_command_lines_message(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"name": "x", "bodies": [{"name": "a", "mass": 1, "inertia": [1, 1, 1], "color": 3}]}')
    with pytest.raises(treedyn.ModelError) as e:
        treedyn.load_model(path)
    assert isinstance(e.value, ValueError)
    assert "color" in str(e.value)


def test_a_bad_model_is_a_model_error_naming_the_item():
    text = json.dumps(
        {
            "name": "bad",
            "bodies": [{"name": "a", "mass": 1, "inertia": [1, 1, 1], "position": [0, 0, 0]}],
            "joints": [{"name": "pin", "type": "revolute", "parent": "ground", "child": "b", "location": [0, 0, 0]}],
        }
    )
    with pytest.raises(treedyn.ModelError) as e:
        treedyn.model_from_json(text)
    assert "pin" in str(e.value) and "'b'" in str(e.value)


def test_builder_builds_what_the_json_reader_reads(pendulum):
    built = pendulum.model()
    read = treedyn.model_from_json(built.to_json())
    assert read.to_json() == built.to_json()
    assert read.info()["mobility"] == 1


def test_builder_refuses_an_unknown_joint_type_by_name():
    b = treedyn.ModelBuilder("m")
    b.body("a", mass=1, inertia=1)
    with pytest.raises(ValueError, match="'hinge'"):
        b.joint("j", "hinge", "ground", "a", location=[0, 0, 0])


def test_builder_validation_lists_every_problem():
    b = treedyn.ModelBuilder("m")
    b.body("a", mass=-1, inertia=1)
    b.body("c", mass=1, inertia=[-1, 1, 1])
    b.joint("j", "revolute", "ground", "a", location=[0, 0, 0])
    b.joint("k", "revolute", "a", "c", location=[0, 0, 0])
    with pytest.raises(treedyn.ModelError) as e:
        b.build()
    text = str(e.value)
    assert "2 problems" in text and "body 'a'" in text and "body 'c'" in text
    b2 = treedyn.ModelBuilder("m")
    b2.body("a", mass=1, inertia=1)
    b2.joint("j", "revolute", "ground", "nobody", location=[0, 0, 0])
    with pytest.raises(treedyn.ModelError, match="joint 'j': unknown body 'nobody'"):
        b2.build()


def test_builder_takes_shapes_forces_and_functions_of_time():
    b = treedyn.ModelBuilder("m")
    b.gravity([0, 0, -9.81])
    b.body("a", mass=2, inertia=[1, 2, 3], position=[0, 0, -1], shape={"type": "box", "size": [0.1, 0.2, 0.3]})
    b.joint("ball", "spherical", "ground", "a", location=[0, 0, 0])
    b.body_force("push", "a", vector=[1, 0, 0], function={"sine": {"amplitude": 2.0, "omega": 3.0}})
    b.body_torque("twist", "a", vector=[0, 0, 1], function=lambda t: 0.5 * t)
    m = b.build()
    assert m.info()["mobility"] == 3
    result = treedyn.simulate(m, "reference", t_end=0.1, dt=0.01)
    assert result.ok


def test_builder_checks_shapes_and_frames_as_the_file_reader_does():
    b = treedyn.ModelBuilder("m")
    with pytest.raises(treedyn.ModelError, match="body 'a' shape: cylinder axis must be"):
        b.body("a", mass=1, inertia=1, shape={"type": "cylinder", "radius": 0.1, "length": 1, "axis": "q"})
    with pytest.raises(treedyn.ModelError, match="body 'a' shape: unknown field 'colour'"):
        b.body("a", mass=1, inertia=1, shape={"type": "sphere", "radius": 0.1, "colour": "red"})
    with pytest.raises(treedyn.ModelError, match="body_force 'push': 'frame' must be"):
        b.body_force("push", "a", vector=[1, 0, 0], frame="bodyy")
    with pytest.raises(treedyn.ModelError, match="body_torque 'twist': 'frame' must be"):
        b.body_torque("twist", "a", vector=[1, 0, 0], frame="world")


def test_assembled_projects_an_inconsistent_initial_state(four_bar):
    data = json.loads(four_bar.to_json())
    data["bodies"][1]["position"][0] += 0.01  # move the coupler off its pins
    moved = treedyn.model_from_json(json.dumps(data))
    assert not moved.info()["initial_state_consistent"]
    with pytest.raises(treedyn.ModelError, match="--assemble|assemble_initial_state"):
        treedyn.Simulator(moved, "dca")
    assert moved.assembled().info()["initial_state_consistent"]


def test_catalogues_of_formulations_and_options():
    names = [f[0] for f in treedyn.formulations()]
    assert names == ["reference", "dca", "hdca", "ali3", "half-implicit", "fully-implicit"]
    options = {o["name"]: o for o in treedyn.options()}
    assert options["alpha"]["formulations"] == ["ali3"]
    assert "rk4" in options["integrator"]["type"]


def test_overrides_change_the_model_and_are_validated_like_the_file(models_dir):
    path = models_dir / "four_bar.json"
    m = treedyn.load_model(path, {"bodies.A.mass": 2.5, "gravity": [0, 0, -9.81], "joints.joint1.axis": np.array([0, 0, 1])})
    assert m.bodies[0]["mass"] == 2.5
    assert list(m.gravity) == [0, 0, -9.81]
    with pytest.raises(treedyn.ModelError, match=r"no body named 'crank' \(bodies: A, B, C\)"):
        treedyn.load_model(path, {"bodies.crank.mass": 2})
    with pytest.raises(treedyn.ModelError, match=r"mass must be positive.*\n.*with the overrides bodies.A.mass=-1"):
        treedyn.load_model(path, {"bodies.A.mass": -1})
    with pytest.raises(treedyn.ModelError, match="unknown field 'masss'"):
        treedyn.load_model(path, {"bodies.A.masss": 1})
    with pytest.raises(ValueError, match="not a JSON value"):
        treedyn.load_model(path, {"bodies.A.mass": float("nan")})
    # The same change through the file and through an override gives the same model.
    text = path.read_text().replace('"mass": 1,', '"mass": 2.5,', 1)
    assert treedyn.model_from_json(text, {"gravity": [0, 0, -9.81]}).to_json() == m.to_json()
