"""The packaged robot description as the retargeter's Pinocchio model sees it."""

import pytest

from rynn_common.action_layout import joint_names
from rynn_common.description.kinematic_model import frame_pose


def test_pinocchio_model_has_the_54_action_joints_in_order(robot_model):
    names = [robot_model.names[i] for i in range(1, robot_model.njoints)]
    assert sorted(names) == sorted(joint_names())
    for side in ("left", "right"):
        for f in range(1, 6):
            assert robot_model.existFrame(f"{side}_finger{f}_tip_link")
        assert robot_model.existFrame(f"{side}_ee_link")


def test_hand_limits_copy_the_wuji_table(robot_model):
    joint = robot_model.getJointId("right_finger1_joint1")
    assert robot_model.lowerPositionLimit[robot_model.idx_qs[joint]] == pytest.approx(0.0475)
    assert robot_model.upperPositionLimit[robot_model.idx_qs[joint]] == pytest.approx(1.6033)


def test_camera_optical_frame_looks_down_at_the_table(robot_model):
    camera = frame_pose(robot_model, "camera_color_optical_frame")
    forward, right, down = camera[:3, 2], camera[:3, 0], camera[:3, 1]
    assert forward[0] > 0.3 and forward[2] < -0.5  # forward and downwards
    assert right[1] == pytest.approx(-1.0, abs=1e-6)  # image x = robot right
    assert down[2] < 0.0
