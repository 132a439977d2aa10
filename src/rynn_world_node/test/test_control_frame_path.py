"""One control-frame path: a generated episode's skeleton messages, rendered by the training
reader, equal what StreamingWorldModel renders live from the same messages built as the retarget
node builds them (rclpy), bit for bit, forearm bars from the recorded elbows included."""

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

from rynn_common.bag_types import make_typestore
from rynn_common.ros_names import CAMERA_SKELETON_TOPIC
from rynn_world.data import RobotEpisodeDataset
from rynn_world.data.robot_episodes import read_episode
from rynn_world.model.configs import get_config
from rynn_world.skeleton import ControlSample, SkeletonRenderer, render_control
from rynn_world.streaming import StreamingWorldModel

ros_conversions = pytest.importorskip("rynn_common.ros_conversions")  # rclpy messages, as the retarget node builds them

CONFIG = get_config("tiny")


@pytest.fixture(scope="module")
def episode_root(tmp_path_factory):
    from rynn_world.episodes.generate import main as generate

    out = tmp_path_factory.mktemp("episodes")
    generate(["--tasks", "dual_picking", "--episodes", "1", "--seed", "5", "--out", str(out),
              "--duration", "0.75", "--width", "320", "--height", "240"])
    return out


def test_episodes_on_their_frame_clock_are_read_frame_by_frame(episode_root):
    """Generated frames are stamped on the 200 Hz command grid (0, 65, 125, 190 ms ...): read at their
    own 16 FPS, every frame is used once (resampling them picked every other frame twice)."""
    dataset = RobotEpisodeDataset(episode_root, clip_frames=9, height=CONFIG.height, width=CONFIG.width)
    frames = dataset.episode(0).frames
    recorded = read_episode(episode_root / "dual_picking" / "episode_0000")
    assert len(frames) == len(recorded.frames) == 12
    assert all((a != b).any() for a, b in zip(frames[:-1], frames[1:])), "no repeated frame"


def _live_messages(bag):
    """Each recorded skeleton as the retarget node would have published it (an rclpy message)."""
    with AnyReader([bag], default_typestore=make_typestore()) as reader:
        connections = [c for c in reader.connections if c.topic == CAMERA_SKELETON_TOPIC]
        recorded = [(stamp, reader.deserialize(raw, c.msgtype)) for c, stamp, raw in reader.messages(connections=connections)]
    live = []
    for stamp, msg in recorded:
        sample = ControlSample.from_message(msg)
        live.append((stamp, ros_conversions.make_bimanual_skeleton(
            sample.joints[0], sample.joints[1], stamp * 1e-9, msg.header.frame_id,
            left_valid=bool(sample.valid[0]), right_valid=bool(sample.valid[1]),
            left_elbow=sample.elbows[0], right_elbow=sample.elbows[1])))
    return live


def test_reader_and_streaming_render_the_same_control_frames(episode_root):
    dataset = RobotEpisodeDataset(episode_root, clip_frames=9, height=CONFIG.height, width=CONFIG.width)
    frames, reader_controls = dataset.episode(0)[:2]
    episode_dir = episode_root / "dual_picking" / "episode_0000"
    recorded = read_episode(episode_dir)
    assert np.isfinite(recorded.elbows).all(), "the generator records the retargeter's elbows"

    model = StreamingWorldModel(CONFIG, intrinsics=recorded.intrinsics)
    model.reset(frames[0])
    live, stamps = [], []
    # As they arrive, on the episode's frame clock (frame j is time j / fps to the reader); a step once
    # the block's last tick is reached.
    for j, (_, msg) in enumerate(_live_messages(episode_dir / "bag")):
        model.push_skeleton(ControlSample.from_message(msg), j / CONFIG.fps)
        if model.next_block_end() <= model.newest_skeleton_stamp + 1e-9:
            model.step()
            live.extend(model.last_control)
            stamps.extend(model.last_control_stamps)
    assert len(live) >= 8
    np.testing.assert_allclose(stamps, np.arange(len(stamps)) / CONFIG.fps, atol=1e-6)  # one skeleton per tick
    live = np.stack(live)
    assert live.max() > 0
    np.testing.assert_array_equal(live, reader_controls[: len(live)])


def test_control_frames_carry_the_forearm_bars(episode_root):
    recorded = read_episode(episode_root / "dual_picking" / "episode_0000")
    renderer = SkeletonRenderer(recorded.intrinsics)
    with_arms = render_control(renderer, recorded.joints_camera[-1], recorded.valid[-1], recorded.elbows[-1])
    hands_only = render_control(renderer, recorded.joints_camera[-1], recorded.valid[-1])
    added = with_arms.any(axis=2) & ~hands_only.any(axis=2)
    assert added.sum() > 200, "the forearm bars are drawn from the elbows"
