"""Recorded bags -> world-model clips in the episode generator's layout (frames.npz, episode.json, index.json)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rosbags.rosbag2 import Reader

from rynn_common.description import D435I_COLOR
from rynn_robot_bridge.recording.metadata import file_sha256
from rynn_robot_bridge.episodes.bag_writer import make_typestore
from rynn_robot_bridge.export.clips import export_clips

from test_export_lerobot import HEIGHT, SECOND, WIDTH, BagBuilder

INTRINSICS = D435I_COLOR.scaled(WIDTH, HEIGHT)


class SkeletonBagBuilder(BagBuilder):
    """Adds CameraInfo and the retargeter's camera-frame skeleton (16 Hz, hands 0.5 m in front of the camera)."""

    def episode(self, *args, with_camera_info=True, **kwargs):
        self._with_camera_info = with_camera_info
        return super().episode(*args, **kwargs)

    def offer(self, topic, msgtype, msg, stamp_ns):
        super().offer(topic, msgtype, msg, stamp_ns)
        if topic == "/camera/camera/color/image_raw" and self.recorder.recording:
            if self._with_camera_info:
                k = INTRINSICS.matrix()
                info = self.t["sensor_msgs/msg/CameraInfo"](
                    header=msg.header, height=HEIGHT, width=WIDTH, distortion_model="plumb_bob", d=np.zeros(5),
                    k=k.ravel(), r=np.eye(3).ravel(), p=np.hstack([k, np.zeros((3, 1))]).ravel(), binning_x=0, binning_y=0,
                    roi=self.t["sensor_msgs/msg/RegionOfInterest"](x_offset=0, y_offset=0, height=0, width=0, do_rectify=False))
                super().offer("/camera/camera/color/camera_info", "sensor_msgs/msg/CameraInfo", info, stamp_ns)
            Point = self.t["geometry_msgs/msg/Point"]
            Hand = self.t["rynn_teleop_msgs/msg/HandSkeleton"]
            hands = [Hand(header=msg.header, side=side, joints=[Point(x=0.1 * (side - 0.5), y=0.01 * j, z=0.5) for j in range(21)],
                          confidence=np.ones(21, np.float32), valid=True) for side in (0, 1)]
            skeleton = self.t["rynn_teleop_msgs/msg/BimanualSkeleton"](
                header=msg.header, left=hands[0], right=hands[1], left_elbow=Point(x=0.0, y=0.0, z=0.0),
                right_elbow=Point(x=0.0, y=0.0, z=0.0), left_elbow_valid=False, right_elbow_valid=False)
            super().offer("/rynn/operator/skeleton_camera", "rynn_teleop_msgs/msg/BimanualSkeleton", skeleton, stamp_ns)


def test_clips_match_the_generator_layout_and_resume(tmp_path):
    builder = SkeletonBagBuilder(tmp_path / "recordings")
    digital = builder.episode("digital", "Stack cups")
    real = builder.episode("real", "Stack cups", seconds=0.5, start_ns=20 * SECOND)
    no_info = builder.episode("real", "Stack cups", seconds=0.5, with_camera_info=False)
    out = tmp_path / "clips"
    entries, skipped = export_clips([tmp_path / "recordings"], out, fps=16, progress=False)
    assert set(skipped) == {str(no_info)} and "CameraInfo" in skipped[str(no_info)]
    assert [(e["task"], e["episode"], e["mode"], e["frames"]) for e in entries] == [
        ("stack_cups", 0, "digital", 16), ("stack_cups", 1, "real", 8)]
    index = json.loads((out / "index.json").read_text())["episodes"]
    assert index == entries and index[0]["source_bag"] == digital.name  # portable: name + sha256, no local path
    assert index[0]["source_bag_sha256"] == file_sha256(next(digital.glob("*.mcap")))
    assert str(tmp_path) not in (out / "index.json").read_text()
    assert [e["bag"] for e in index] == ["stack_cups/episode_0000/bag", "stack_cups/episode_0001/bag"]
    frames = np.load(out / index[1]["frames_file"])
    assert set(frames.files) == {"stamp_ns", "action", "joint_position", "skeleton_uvd", "skeleton_valid"}
    assert frames["action"].shape == frames["joint_position"].shape == (8, 54)
    assert frames["skeleton_uvd"].shape == (8, 2, 21, 3) and frames["skeleton_valid"].all()
    np.testing.assert_allclose(frames["stamp_ns"], np.arange(8) * SECOND / 16, atol=1)
    expected_u = INTRINSICS.fx * -0.05 / 0.5 + INTRINSICS.cx  # the left wrist
    assert frames["skeleton_uvd"][0, 0, 0] == pytest.approx([expected_u, INTRINSICS.cy, 0.5])

    # The clip's bag holds exactly one camera frame per frames.npz row, as the generator's episodes do.
    store = make_typestore()
    with Reader(out / index[1]["bag"]) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        images = [store.deserialize_cdr(raw, c.msgtype) for c, stamp, raw in reader.messages()
                  if c.topic == "/camera/camera/color/image_raw"]
    assert counts["/camera/camera/color/image_raw"] == counts["/camera/camera/color/camera_info"] == 8
    assert counts["/rynn/operator_skeleton"] == counts["/rynn/action"] == counts["/rynn/reference_image"] + 7
    assert (images[0].width, images[0].height, images[0].encoding) == (WIDTH, HEIGHT, "rgb8")
    assert int(images[0].data.reshape(HEIGHT, WIDTH, 3)[..., 1].mean()) == 100  # the real episode's marker colour

    again, _ = export_clips([real], out, fps=16, progress=False)  # already exported: nothing new
    assert again == entries


def test_a_bag_without_the_skeleton_topic_is_named(tmp_path):
    bag = BagBuilder(tmp_path / "recordings").episode("real", "t", seconds=0.3)
    entries, skipped = export_clips([bag], tmp_path / "clips", fps=16, progress=False)
    assert entries == [] and "missing topic(s) /rynn/operator/skeleton_camera" in skipped[str(bag)]


@pytest.mark.slow  # imports the training stack (torch): ~10 s of CPU
def test_the_training_reader_takes_recorded_clips(tmp_path):
    robot_episodes = pytest.importorskip("rynn_world.data.robot_episodes")
    builder = SkeletonBagBuilder(tmp_path / "recordings")
    builder.episode("digital", "wipe", seconds=0.5)
    entries, _ = export_clips([tmp_path / "recordings"], tmp_path / "clips", fps=16, progress=False)
    episode = robot_episodes.read_episode(tmp_path / "clips" / entries[0]["bag"].rsplit("/", 1)[0])
    assert episode.frames.shape == (8, HEIGHT, WIDTH, 3) and episode.actions.shape == (8, 54)
    np.testing.assert_allclose(episode.joints_camera[0, 0, 0], [-0.05, 0.0, 0.5], atol=1e-6)
