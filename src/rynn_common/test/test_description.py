import mujoco
import pytest

from rynn_common.description import D435I_COLOR, default_urdf_path, resolve_urdf_path
from rynn_common.description.generate_urdf import build


def test_committed_urdf_matches_generator():
    assert default_urdf_path().read_text() == build()


def test_mujoco_loads_the_same_urdf():
    model = mujoco.MjModel.from_xml_path(str(default_urdf_path()))
    assert model.njnt == 54
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "camera_color_optical_frame") >= 0


def test_intrinsics_scale():
    scaled = D435I_COLOR.scaled(832, 480)
    assert (scaled.fx, scaled.cx, scaled.fy, scaled.cy) == pytest.approx((615 * 1.3, 416.0, 615.0, 240.0))


def test_configured_urdf_must_exist(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.urdf"):
        resolve_urdf_path(str(tmp_path / "nope.urdf"))
    assert resolve_urdf_path("") == default_urdf_path()
