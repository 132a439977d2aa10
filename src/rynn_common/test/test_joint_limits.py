"""The one reader of the URDF's joint limits (``rynn_common.description.joint_limits``)."""

import re
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from rynn_common.action_layout import ACTION_DIM, arm_joint_names, joint_names
from rynn_common.description import default_urdf_path
from rynn_common.description.joint_limits import joint_limits_from_urdf

SOURCES = Path(__file__).resolve().parents[2]  # src/
# Pinocchio's parsed limits, or a <limit> tag found in the XML
OTHER_LIMIT_READERS = re.compile(r"PositionLimit|velocityLimit|effortLimit|[\"']limit[\"']")


@pytest.fixture(scope="module")
def limits():
    return joint_limits_from_urdf()


def one_joint_urdf(path, joint_type: str, limit: str) -> str:
    path.write_text(
        '<robot name="r"><link name="a"/><link name="b"/>'
        f'<joint name="left_arm_joint1" type="{joint_type}"><parent link="a"/><child link="b"/>'
        f'<axis xyz="0 0 1"/>{limit}</joint></robot>'
    )
    return str(path)


def test_joint_limits_come_from_the_urdf(limits):
    names = joint_names()
    i = names.index("left_arm_joint1")
    assert (limits.lower[i], limits.upper[i], limits.velocity[i]) == (-3.0, 0.9, 2.6)
    i = names.index("left_arm_joint2")
    assert (limits.lower[i], limits.upper[i]) == (-0.35, 2.6)
    assert limits.lower.shape == limits.upper.shape == limits.velocity.shape == (ACTION_DIM,)
    assert limits.names == tuple(names)


def test_joint_limits_equal_what_pinocchio_parses(limits):
    """The XML reader agrees with the kinematics library the retargeting and robot state solve with."""
    model = pin.buildModelFromUrdf(str(default_urdf_path()))
    joints = [model.joints[model.getJointId(name)] for name in joint_names()]
    np.testing.assert_array_equal(limits.lower, [model.lowerPositionLimit[j.idx_q] for j in joints])
    np.testing.assert_array_equal(limits.upper, [model.upperPositionLimit[j.idx_q] for j in joints])
    np.testing.assert_array_equal(limits.velocity, [model.velocityLimit[j.idx_v] for j in joints])
    np.testing.assert_array_equal(limits.effort, [model.effortLimit[j.idx_v] for j in joints])


def test_a_chains_limits_are_its_rows_of_the_action_joints(limits):
    names = arm_joint_names("right")
    arm = limits.select(names)
    rows = [joint_names().index(name) for name in names]
    assert arm.names == tuple(names)
    for attribute in ("lower", "upper", "velocity", "effort"):
        np.testing.assert_array_equal(getattr(arm, attribute), getattr(limits, attribute)[rows])
    with pytest.raises(ValueError, match="tail_joint"):
        limits.select(["tail_joint"])


def test_urdf_without_the_action_joints_is_refused(tmp_path):
    urdf = one_joint_urdf(tmp_path / "one_joint.urdf", "revolute", '<limit lower="-1" upper="1" effort="1" velocity="1"/>')
    with pytest.raises(ValueError, match="left_arm_joint2"):
        joint_limits_from_urdf(urdf)
    assert joint_limits_from_urdf(urdf, ["left_arm_joint1"]).upper.tolist() == [1.0]


def test_a_joint_without_a_position_range_is_refused(tmp_path):
    """A continuous joint has no lower/upper to clamp commands to (Pinocchio would give it +-1.01 on cos/sin)."""
    urdf = one_joint_urdf(tmp_path / "continuous.urdf", "continuous", '<limit effort="1" velocity="1"/>')
    with pytest.raises(ValueError, match=r"\['left_arm_joint1'\] are not of a type with a position range"):
        joint_limits_from_urdf(urdf, ["left_arm_joint1"])


def test_no_other_module_reads_the_urdf_limits():
    """Pinocchio and MuJoCo parse the same numbers from a revolute joint, so only a second reader in the
    code, not the values, would let the packages' limits drift apart."""
    readers = sorted(str(path.relative_to(SOURCES)) for path in SOURCES.rglob("*.py")
                     if "/test/" not in str(path) and OTHER_LIMIT_READERS.search(path.read_text()))
    assert readers == ["rynn_common/rynn_common/description/generate_urdf.py",  # writes the tags
                       "rynn_common/rynn_common/description/joint_limits.py"], readers
