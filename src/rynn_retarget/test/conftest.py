from pathlib import Path

import pytest

from rynn_common.description import default_urdf_path
from rynn_common.description.joint_limits import joint_limits_from_urdf
from rynn_common.description.kinematic_model import load_model
from rynn_retarget.kinematics.robot_model import hand_chain_from_urdf

# The vendor's single-hand description, in the shared folder beside the repo (tests only; the product never needs it)
WUJI_RIGHT_URDF = Path("/work/shared/robots/wuji_hand_description/urdf/right.urdf")


@pytest.fixture(scope="session")
def robot_model():
    return load_model(default_urdf_path())


@pytest.fixture(scope="session")
def robot_limits():
    return joint_limits_from_urdf(default_urdf_path())


@pytest.fixture(scope="session")
def wuji_right_hand():
    """The vendor WUJI right hand's chain; the test is skipped where the description is absent."""
    if not WUJI_RIGHT_URDF.exists():
        pytest.skip("vendor WUJI description not present")
    return hand_chain_from_urdf(WUJI_RIGHT_URDF, "right")
