"""Model import from Python: load_model reads URDF, MJCF and SDFormat files by extension and
raises what the file holds that treedyn does not model as ModelImportWarning; import_model writes
the JSON, which reads back as the same model and simulates the same."""

import pathlib

import numpy as np
import pytest

import treedyn

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "import" / "data"
HUMANOID = pathlib.Path("/usr/share/mujoco/model/humanoid/humanoid.xml")


def test_load_model_imports_urdf_and_warns_of_what_it_leaves_out():
    with pytest.warns(treedyn.ModelImportWarning, match=r"limits of 3 joints \(shoulder, elbow, slide\)"):
        arm = treedyn.load_model(DATA / "serial_arm.urdf")
    assert arm.body_names == ["upper", "fore", "tool"]  # the massless base merged into the world
    assert arm.joint_names == ["shoulder", "elbow", "slide"]
    assert list(arm.gravity) == [0, 0, -9.81]


def test_load_model_imports_mjcf_and_sdf_with_overrides(models_dir):
    four_bar_sdf = treedyn.load_model(DATA / "four_bar.sdf", {"bodies.A.mass": 2})
    assert four_bar_sdf.bodies[0]["mass"] == 2.0
    mj = treedyn.load_model(DATA / "four_bar.xml")
    assert mj.joint_names[-1] == "joint4"


def test_import_model_writes_json_that_simulates_as_the_file(tmp_path):
    model, warnings = treedyn.import_model(DATA / "four_bar.urdf", tmp_path / "four_bar.json")
    assert warnings == []
    again = treedyn.load_model(tmp_path / "four_bar.json")
    a = treedyn.simulate(model, "dca", t_end=0.5)
    b = treedyn.simulate(again, "dca", t_end=0.5)
    assert a.status == b.status == "ok"
    assert np.array_equal(a.poses, b.poses)


def test_humanoid_connectors_are_stated_and_can_be_refused():
    assert HUMANOID.exists(), "MuJoCo's sample models are missing: scripts/install-deps.sh installs libmujoco-samples"
    model, warnings = treedyn.import_model(HUMANOID)
    assert any("2 connector bodies" in w for w in warnings)
    with pytest.raises(treedyn.ModelError, match="body 'right_foot': its joints 'right_ankle_y', 'right_ankle_x'"):
        treedyn.import_model(HUMANOID, connector_mass_fraction=0)


def test_a_bad_urdf_is_a_model_error_with_its_line(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="r">\n<link name="a">\n</robot>')
    with pytest.raises(treedyn.ModelError, match=r"bad.urdf:3:\d+: malformed XML"):
        treedyn.load_model(bad)


def test_a_sweep_reads_an_imported_file_as_its_json():
    from treedyn import sweeps

    with pytest.warns(treedyn.ModelImportWarning, match="limits of 3 joints"):  # shown once, where the sweep starts
        text = sweeps._model_text(DATA / "serial_arm.urdf")
    model = treedyn.model_from_json(text, {"bodies.tool.mass": 0.75})
    assert model.bodies[2]["mass"] == 0.75
