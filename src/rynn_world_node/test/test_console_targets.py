"""The console's 3D view shows the operator's trackers where they drive the robot: the IK targets and
elbow references of the retarget pipeline, in base_link (rynn_world.console.targets)."""

from __future__ import annotations

import numpy as np
from transforms3d.quaternions import mat2quat, quat2mat

from rynn_retarget.operator.synthetic import SyntheticOperator, neutral_frame
from rynn_world.console.targets import TrackerTargets, elbow_label, target_label

SIDES = ("left", "right")


def as_tf(targets: TrackerTargets, frame) -> dict:
    """An operator frame as the console receives it from /tf: frame id -> (xyz, wxyz) in operator_world."""
    frame_of = {name: frame_id for frame_id, name in targets.tracker_by_frame.items()}
    return {frame_of[name]: (matrix[:3, 3].copy(), mat2quat(matrix[:3, :3])) for name, matrix in frame.trackers.items()}


def test_targets_are_the_pipelines_ik_targets_near_the_robot():
    targets = TrackerTargets.from_retarget_config()
    pipeline = targets.pipeline
    operator = SyntheticOperator()
    for t in (0.0, 1.3, 4.7):
        frame = operator.frame_at(t)
        shown = targets.targets(as_tf(targets, frame))
        assert set(shown) == {target_label(s) for s in SIDES} | {elbow_label(s) for s in SIDES}
        for side in SIDES:
            target, elbow = pipeline.arm_target(side, frame.trackers)
            xyz, wxyz = shown[target_label(side)]
            np.testing.assert_allclose(xyz, target[:3, 3], atol=1e-9)
            np.testing.assert_allclose(quat2mat(wxyz), target[:3, :3], atol=1e-6)
            np.testing.assert_allclose(shown[elbow_label(side)][0], elbow, atol=1e-9)
            # Where the robot's hand can go (about an arm's length of base_link), not in the operator's room.
            neutral = pipeline.arms[side].ee_pose(pipeline.config.neutral_arm(side))[:3, 3]
            assert np.linalg.norm(xyz - neutral) < 0.6, (side, t, xyz, neutral)


def test_calibrating_on_a_sample_puts_its_targets_on_the_robots_neutral_hands():
    targets = TrackerTargets.from_retarget_config()
    pipeline = targets.pipeline
    sample = neutral_frame(seed=3)
    moved = {name: matrix.copy() for name, matrix in sample.trackers.items()}
    for name, matrix in moved.items():
        if name != "chest":
            matrix[:3, 3] += (0.12, -0.05, 0.08)  # this operator holds the hands elsewhere: calibration absorbs it
    sample.trackers = moved
    before = targets.targets(as_tf(targets, sample))
    assert targets.calibrate(as_tf(targets, sample))
    after = targets.targets(as_tf(targets, sample))
    for side in SIDES:
        neutral = pipeline.arms[side].ee_pose(pipeline.config.neutral_arm(side))
        np.testing.assert_allclose(after[target_label(side)][0], neutral[:3, 3], atol=1e-6)
        assert np.linalg.norm(before[target_label(side)][0] - neutral[:3, 3]) > 0.1  # it did move them


def test_missing_or_foreign_trackers_show_nothing_for_that_arm():
    targets = TrackerTargets.from_retarget_config()
    tf = as_tf(targets, SyntheticOperator().frame_at(0.5))
    del tf["operator_left_wrist"]
    tf["some_robot_link"] = (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
    tf["operator_right_upper_arm"] = (np.array([np.nan, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0]))
    assert targets.targets(tf) == {}
    assert not targets.calibrate(tf)


def test_the_3d_view_starts_framed_on_the_robot_and_draws_targets_in_base_link():
    from rynn_common.description import default_urdf_path
    from rynn_world.console.page import ConsoleActions, ConsolePage

    ignore = ConsoleActions(lambda *_: None, lambda *_: None, lambda: None, lambda _: None, lambda _: None)
    page = ConsolePage("127.0.0.1", 0, default_urdf_path(), ignore, jpeg_quality=70, overlay_on=False)
    try:
        urdf = page.robot._urdf
        origins = np.array([urdf.get_transform(link)[:3, 3] for link in urdf.link_map])
        look_at, position = np.asarray(page.server.initial_camera.look_at), np.asarray(page.server.initial_camera.position)
        assert np.all(look_at >= origins.min(axis=0)) and np.all(look_at <= origins.max(axis=0)), (look_at, origins)
        distance = np.linalg.norm(position - look_at)
        assert 1.0 <= distance <= 4.0 and position[0] > look_at[0], (position, look_at)  # in front of the robot

        targets = TrackerTargets.from_retarget_config()
        shown = targets.targets(as_tf(targets, SyntheticOperator().frame_at(2.0)))
        page.show_targets(shown)
        for label, (xyz, _wxyz) in shown.items():
            handle = page._trackers[label]
            assert handle.name == f"/targets/{label}"
            np.testing.assert_allclose(handle.position, xyz, atol=1e-6)
    finally:
        page.stop()
