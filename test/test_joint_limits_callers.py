"""Every package limits the joints as the one reader (``joint_limits_from_urdf``) reads the URDF: the bridge's
commander, the simulated robot (its gate's limits, MuJoCo's joint ranges, the servos' force ranges) and the
retargeting (its action clamp, IK and hand chains), on the packaged URDF and on a copy with changed limits."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import rynn_robot_bridge.sim  # noqa: F401  (chooses the headless GL backend before mujoco loads)
from rynn_common.action_layout import SIDES, arm_joint_names, hand_joint_names, joint_names
from rynn_common.description import default_urdf_path
from rynn_common.description.joint_limits import joint_limits_from_urdf
from rynn_retarget.config import RetargetConfig
from rynn_retarget.pipeline import RetargetPipeline
from rynn_robot_bridge.bridge.commander import RobotCommander
from rynn_robot_bridge.bridge.mode import Mode
from rynn_robot_bridge.bridge.settings import BridgeSettings
from rynn_robot_bridge.sim.simulator import SimulatedRobot

CHANGED_LIMITS = {  # joint -> <limit> attributes written into the copy
    "left_arm_joint1": {"lower": "-2.5", "velocity": "2.1"},
    "right_arm_joint4": {"upper": "1.25", "effort": "22"},
    "right_finger2_joint3": {"lower": "0.05", "upper": "1.2"},
}


def urdf_with_changed_limits(directory) -> str:
    tree = ET.parse(default_urdf_path())
    for joint in tree.getroot().iter("joint"):
        for attribute, value in CHANGED_LIMITS.get(joint.get("name"), {}).items():
            joint.find("limit").set(attribute, value)
    path = directory / "changed_limits.urdf"
    tree.write(path)
    return str(path)


@pytest.fixture(params=["packaged", "changed"])
def urdf_path(request, tmp_path) -> str:
    return str(default_urdf_path()) if request.param == "packaged" else urdf_with_changed_limits(tmp_path)


def test_every_caller_limits_the_joints_as_the_reader_reads_the_urdf(urdf_path):
    limits = joint_limits_from_urdf(urdf_path)
    if urdf_path != str(default_urdf_path()):
        assert limits.lower[joint_names().index("left_arm_joint1")] == -2.5
        assert limits.effort[joint_names().index("right_arm_joint4")] == 22.0
        assert not np.array_equal(limits.upper, joint_limits_from_urdf().upper)

    settings = BridgeSettings(urdf_path=urdf_path)
    commander = RobotCommander.from_settings(Mode.DIGITAL, settings, rate_hz=200.0)
    for attribute in ("lower", "upper", "velocity", "effort"):
        np.testing.assert_array_equal(getattr(commander.joint_limits, attribute), getattr(limits, attribute))
        np.testing.assert_array_equal(getattr(commander.limiter.limits, attribute), getattr(limits, attribute))
    margin = settings.state_position_margin_rad
    np.testing.assert_array_equal(commander.state_validator.lower, limits.lower - margin)
    np.testing.assert_array_equal(commander.state_validator.upper, limits.upper + margin)

    robot = SimulatedRobot("empty", urdf_path=urdf_path)
    try:
        for attribute in ("lower", "upper", "velocity", "effort"):
            np.testing.assert_array_equal(getattr(robot.limits, attribute), getattr(limits, attribute))
        ranges = np.array([robot.model.joint(name).range for name in joint_names()])
        np.testing.assert_array_equal(ranges, np.stack([limits.lower, limits.upper], axis=1))
        forces = np.array([robot.model.actuator(name).forcerange for name in joint_names()])
        np.testing.assert_array_equal(forces, np.stack([-limits.effort, limits.effort], axis=1))
    finally:
        robot.close()

    pipeline = RetargetPipeline(RetargetConfig(urdf_path=urdf_path))
    np.testing.assert_array_equal(pipeline.lower, limits.lower)
    np.testing.assert_array_equal(pipeline.upper, limits.upper)
    for side in SIDES:
        arm, hand = limits.select(arm_joint_names(side)), limits.select(hand_joint_names(side))
        np.testing.assert_array_equal(pipeline.arms[side].lower, arm.lower)
        np.testing.assert_array_equal(pipeline.arms[side].upper, arm.upper)
        np.testing.assert_array_equal(pipeline.hands[side].chain.lower, hand.lower)
        np.testing.assert_array_equal(pipeline.hands[side].chain.upper, hand.upper)
