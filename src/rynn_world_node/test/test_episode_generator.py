"""The paired-episode generator: bags an independent reader (rosbags) opens, resumable, deterministic."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import Reader

from rynn_common.bag_types import make_typestore
from rynn_retarget.pipeline import RetargetPipeline
from rynn_world.episodes.generate import main

TASKS = ["block_pushing", "lid_placement"]
ARGS = ["--tasks", *TASKS, "--episodes", "1", "--seed", "7", "--duration", "0.5", "--width", "320", "--height", "240"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("episodes")
    (out / "lid_placement" / "episode_0000.partial").mkdir(parents=True)  # debris of an interrupted run
    main([*ARGS, "--out", str(out)])
    return out


def test_bags_have_the_expected_topics_counts_and_shapes(generated):
    store = make_typestore()
    for task in TASKS:
        bag = generated / task / "episode_0000" / "bag"
        assert yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]["storage_identifier"] == "mcap"
        with Reader(bag) as reader:
            counts = {c.topic: c.msgcount for c in reader.connections}
            assert counts == {
                "/camera/camera/color/image_raw": 8,  # 0.5 s at 16 FPS
                "/camera/camera/color/camera_info": 8,
                "/rynn/reference_image": 1,
                "/rynn/operator/skeleton_camera": 8,  # the recorder's topic: one episode schema
                "/rynn/action": 100,  # 200 Hz
                "/joint_states": 100,
                "/rynn/episode": 1,
            }
            messages = {}
            for connection, _, raw in reader.messages():
                messages.setdefault(connection.topic, []).append(store.deserialize_cdr(raw, connection.msgtype))
        image = messages["/camera/camera/color/image_raw"][3]
        assert (image.width, image.height, image.encoding, image.header.frame_id) == (320, 240, "rgb8", "camera_color_optical_frame")
        assert image.data.reshape(240, 320, 3).std() > 10
        info = messages["/camera/camera/color/camera_info"][3]
        assert info.header.stamp == image.header.stamp and info.k[0] == pytest.approx(615.0 / 2)
        skeleton = messages["/rynn/operator/skeleton_camera"][-1]
        assert skeleton.header.frame_id == "camera_color_optical_frame" and len(skeleton.left.joints) == 21
        assert skeleton.left.valid and skeleton.right.valid
        assert min(p.z for hand in (skeleton.left, skeleton.right) for p in hand.joints) > 0.2  # in front of the camera
        # The elbows the retargeter produces for the commanded arms, as the live retarget node publishes them.
        pipeline = RetargetPipeline()
        action = messages["/rynn/action"][-1].positions
        assert skeleton.left_elbow_valid and skeleton.right_elbow_valid
        elbows = np.array([[e.x, e.y, e.z] for e in (skeleton.left_elbow, skeleton.right_elbow)])
        assert elbows[:, 2].min() > 0.1  # in front of the camera
        assert elbows[0, 0] < 0 < elbows[1, 0]  # left elbow on the image's left (camera x points right)
        # Within the smoothing lag of the commanded arms' elbows (the skeleton carries the target's).
        np.testing.assert_allclose(elbows, pipeline.elbows_in_camera(np.asarray(action)), atol=0.15)
        actions = np.stack([m.positions for m in messages["/rynn/action"]])
        assert actions.shape == (100, 54) and np.isfinite(actions).all()
        assert np.ptp(actions[:, :14], axis=0).max() > 0.01  # the operator moved the arms
        states = messages["/joint_states"]
        assert len(states[-1].name) == 54 and states[-1].name[0] == "left_arm_joint1"
        np.testing.assert_allclose(states[-1].position[:14], actions[-1, :14], atol=0.05)  # the robot followed
        summary = json.loads(messages["/rynn/episode"][0].data)
        assert summary["task"] == task and isinstance(summary["success"], bool)


def test_generated_bags_are_written_by_the_recorders_writer(generated):
    """Same writer as the recorder: offered QoS of the live publishers, type hashes, ros_distro jazzy."""
    from mcap.reader import make_reader

    bag = generated / TASKS[0] / "episode_0000" / "bag"
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["ros_distro"] == "jazzy"
    topics = {t["topic_metadata"]["name"]: t["topic_metadata"] for t in info["topics_with_message_count"]}
    assert topics["/rynn/episode"]["offered_qos_profiles"][0]["durability"] == "transient_local"
    camera = topics["/camera/camera/color/image_raw"]["offered_qos_profiles"][0]
    assert (camera["reliability"], camera["durability"], camera["depth"]) == ("reliable", "volatile", 2)
    with next(bag.glob("*.mcap")).open("rb") as stream:
        channels = {c.topic: c.metadata for c in make_reader(stream).get_summary().channels.values()}
    assert channels["/rynn/action"]["topic_type_hash"] == make_typestore().hash_rihs01("rynn_teleop_msgs/msg/RobotAction")
    assert yaml.safe_load(channels["/rynn/episode"]["offered_qos_profiles"]) == topics["/rynn/episode"]["offered_qos_profiles"]


def test_index_lists_every_episode_and_no_partial_remains(generated):
    index = json.loads((generated / "index.json").read_text())["episodes"]
    assert [(e["task"], e["episode"], e["frames"]) for e in index] == [(t, 0, 8) for t in TASKS]
    assert not list(generated.glob("*/*.partial"))
    frames = np.load(generated / index[0]["frames_file"])
    assert set(frames.files) == {"stamp_ns", "action", "joint_position", "object_mask", "object_position"}
    assert frames["action"].shape == (8, 54) and frames["object_mask"].shape == (8, 240, 320)


def test_rerun_skips_finished_episodes(generated):
    bag_file = next((generated / TASKS[0] / "episode_0000" / "bag").glob("*.mcap"))
    before = bag_file.stat().st_mtime_ns
    main([*ARGS, "--out", str(generated)])
    assert bag_file.stat().st_mtime_ns == before


def test_same_seed_gives_the_same_episode_also_from_worker_processes(generated, tmp_path):
    main(["--tasks", *TASKS[:2], *ARGS[1 + len(TASKS):], "--jobs", "2", "--out", str(tmp_path)])
    for task in TASKS[:2]:
        first = np.load(generated / task / "episode_0000" / "frames.npz")
        again = np.load(tmp_path / task / "episode_0000" / "frames.npz")
        for key in first.files:
            np.testing.assert_array_equal(first[key], again[key])
    assert [e["task"] for e in json.loads((tmp_path / "index.json").read_text())["episodes"]] == sorted(TASKS[:2])

