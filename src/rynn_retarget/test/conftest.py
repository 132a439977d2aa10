import pytest

from rynn_common.description import default_urdf_path
from rynn_retarget.kinematics.robot_model import load_model


@pytest.fixture(scope="session")
def robot_model():
    return load_model(default_urdf_path())
