"""Recorded bags -> world-model clips in the episode generator's layout (frames.npz, episode.json, index.json)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rosbags.rosbag2 import Reader

from recorded_bags import HEIGHT, SECOND, WIDTH, BagBuilder, SkeletonBagBuilder
from rynn_common.bag_types import make_typestore
from rynn_robot_bridge.export.clips import export_clips
from rynn_robot_bridge.recording.metadata import file_sha256


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
    assert set(frames.files) == {"stamp_ns", "action", "joint_position"}
    assert frames["action"].shape == frames["joint_position"].shape == (8, 54)
    np.testing.assert_allclose(frames["stamp_ns"], np.arange(8) * SECOND / 16, atol=1)

    # The clip's bag holds exactly one camera frame per frames.npz row, as the generator's episodes do.
    store = make_typestore()
    with Reader(out / index[1]["bag"]) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        messages = [(c.topic, store.deserialize_cdr(raw, c.msgtype)) for c, stamp, raw in reader.messages()
                    if c.topic in ("/camera/camera/color/image_raw", "/rynn/operator/skeleton_camera")]
    images = [m for topic, m in messages if topic == "/camera/camera/color/image_raw"]
    skeleton = next(m for topic, m in messages if topic == "/rynn/operator/skeleton_camera")
    assert counts["/camera/camera/color/image_raw"] == counts["/camera/camera/color/camera_info"] == 8
    assert counts["/rynn/operator/skeleton_camera"] == counts["/rynn/action"] == counts["/rynn/reference_image"] + 7
    # The recorded skeleton as it was, elbows included: the recorder's schema, not a translation.
    assert skeleton.left.joints[0].x == pytest.approx(-0.05) and skeleton.left.joints[20].y == pytest.approx(0.2)
    assert skeleton.left_elbow_valid and not skeleton.right_elbow_valid
    assert (skeleton.left_elbow.x, skeleton.left_elbow.y, skeleton.left_elbow.z) == pytest.approx((-0.2, 0.3, 0.6))
    assert (images[0].width, images[0].height, images[0].encoding) == (WIDTH, HEIGHT, "rgb8")
    assert int(images[0].data.reshape(HEIGHT, WIDTH, 3)[..., 1].mean()) == 100  # the real episode's marker colour

    again, _ = export_clips([real], out, fps=16, progress=False)  # already exported: nothing new
    assert again == entries


def test_a_bag_without_the_skeleton_topic_is_named(tmp_path):
    bag = BagBuilder(tmp_path / "recordings").episode("real", "t", seconds=0.3)
    entries, skipped = export_clips([bag], tmp_path / "clips", fps=16, progress=False)
    assert entries == [] and "missing topic(s) /rynn/operator/skeleton_camera" in skipped[str(bag)]
