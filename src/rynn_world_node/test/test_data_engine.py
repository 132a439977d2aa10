"""The data engine (rynn_world.engine): digital episodes from recorded ones through the live streaming path.

Sources are made here by the project's own writers: task-operator episodes by the generator
(rynn_world.episodes.generate) and value-coded episodes (frame k is one flat colour, so an
anchor's frame index can be read back from the pixels) by its EpisodeBagWriter. The model is the
``tiny`` config (random weights) with a compositing radius, so pixels away from the operator's
hands are the reference's exactly: that is how the tests see which frame each chunk started from.
"""

import dataclasses
import json
import subprocess
import sys

import cv2
import numpy as np
import pyarrow.parquet as pq
import pytest
from rosbags.rosbag2 import Reader

from ros_test_tools import node_env
from rynn_common.description import CameraIntrinsics
from rynn_robot_bridge.episodes.bag_writer import EpisodeBagWriter
from rynn_robot_bridge.episodes.layout import write_episode_files, write_index
from rynn_robot_bridge.export.lerobot import export as export_lerobot
from rynn_world.compositing import compositor_for
from rynn_world.data.clips import render_skeleton
from rynn_world.data.robot_episodes import read_episode
from rynn_world.engine import DataEngine, EngineError, EngineSettings, ModelInfo, Reference, find_sources, read_manifest
from rynn_world.image_input import to_model_rgb
from rynn_world.model.configs import get_config
from rynn_world.streaming import StreamingWorldModel

CFG = dataclasses.replace(get_config("tiny"), composite_radius_px=6, composite_feather_px=2.0)
INFO = ModelInfo(config="tiny", checkpoint="none", checkpoint_sha256="none", description="", device="cpu")
SOURCE_K = CameraIntrinsics(width=96, height=72, fx=60.0, fy=60.0, cx=48.0, cy=36.0)
ACTION_TOPIC_BYTES = ("/rynn/action", "/joint_states", "/rynn/operator/skeleton_camera")


def _factory(batch_size: int):
    model = StreamingWorldModel(CFG, seed=0, batch_size=batch_size, vae_kernels="onednn")  # the CLI's CPU kernels
    return model, "tiny, random weights (tests)"


def _engine(out, reference: Reference | None = None, batch_size=2, lerobot=False):
    settings = EngineSettings(reference=reference or Reference(), batch_size=batch_size, lerobot=lerobot, progress=False)
    return DataEngine(out, _factory, INFO, settings)


def _value_frame(k: int) -> np.ndarray:
    """Source frame k: one flat colour, distinct for every k < 256 (and at any size after INTER_AREA)."""
    return np.full((SOURCE_K.height, SOURCE_K.width, 3), (k % 256, 255 - k % 256, (7 * k) % 256), dtype=np.uint8)


def _write_value_episode(root, task: str, index: int, frames: int, seed: int) -> None:
    """One episode in the generator's layout, written by its EpisodeBagWriter: 200 Hz actions and joint
    states, 16 FPS images and skeletons (both hands small, in the top-left corner of the image)."""
    rng = np.random.default_rng(seed)
    directory = root / task / f"episode_{index:04d}"
    directory.mkdir(parents=True)
    writer = EpisodeBagWriter(directory / "bag", SOURCE_K)
    writer.write_reference_image(_value_frame(0), 0)
    arrays = {"stamp_ns": [], "action": [], "joint_position": []}
    hand = rng.normal(0.0, 0.004, (21, 3)) + (-0.30, -0.20, 0.5)
    for tick in range(int(frames * 200 / 16)):
        stamp = tick * 5_000_000
        action = rng.normal(0.0, 0.5, 54)
        writer.write_action(action, stamp)
        if tick % 25 in (0, 12) and len(arrays["stamp_ns"]) < frames:  # 16 FPS on the 200 Hz grid
            k = len(arrays["stamp_ns"])
            writer.write_frame(_value_frame(k), stamp)
            joints = np.stack([hand + (0.002 * np.sin(k / 5), 0, 0), hand + (0.03, 0.01, 0)])
            writer.write_skeleton(joints, np.array([True, True]), np.full((2, 3), np.nan), stamp)
            arrays["stamp_ns"].append(stamp)
            arrays["action"].append(action)
            arrays["joint_position"].append(action * 0.5)
        writer.write_joint_state(action * 0.5, np.zeros(54), np.zeros(54), stamp + 2_000_000)
    summary = {"task": task, "episode": index, "seed": seed, "success": True, "frames": frames, "fps": 16.0,
               "image_width": SOURCE_K.width, "image_height": SOURCE_K.height, "operator": "test",
               "bag": f"{task}/{directory.name}/bag", "frames_file": f"{task}/{directory.name}/frames.npz"}
    writer.write_episode_summary(summary, stamp)
    writer.close({"task": task})
    write_episode_files(directory, {k: np.asarray(v) for k, v in arrays.items()}, summary)


@pytest.fixture(scope="module")
def value_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("value_episodes")
    for index, frames in enumerate((170, 37, 41, 33)):
        _write_value_episode(root, "value_task", index, frames, seed=index)
    write_index(root)
    return root


@pytest.fixture(scope="module")
def task_root(tmp_path_factory):
    """Two short task-operator episodes from the project's generator."""
    from rynn_world.episodes.generate import main as generate

    out = tmp_path_factory.mktemp("task_episodes")
    generate(["--tasks", "block_pushing", "--episodes", "2", "--seed", "5", "--out", str(out),
              "--duration", "1.5", "--width", "96", "--height", "64"])
    return out


def _messages(bag, topics):
    with Reader(bag) as reader:
        connections = [c for c in reader.connections if c.topic in topics]
        return [(c.topic, stamp, bytes(raw)) for c, stamp, raw in reader.messages(connections=connections)]


def _far_from_hands(reference, control):
    """Pixels where the compositor keeps the reference's value for the first frame after an anchor."""
    compositor = compositor_for(CFG, static_camera=True)
    compositor.reset(reference)
    return compositor.mask(control) == 0


def test_digital_task_episodes_keep_the_source_actions_bit_for_bit(task_root, tmp_path):
    out = tmp_path / "digital"
    sources = find_sources([task_root])
    written = _engine(out, batch_size=2).run(sources)
    assert sorted(e["output"] for e in written) == ["block_pushing/episode_0000", "block_pushing/episode_0001"]
    for source in sources:
        digital = out / source.output_name
        with np.load(source.directory / "frames.npz") as a, np.load(digital / "frames.npz") as b:
            for name in ("stamp_ns", "action", "joint_position"):
                assert b[name].dtype == a[name].dtype and np.array_equal(a[name], b[name]), name
        # every action, joint state and skeleton message: the same bytes at the same stamps
        assert _messages(digital / "bag", ACTION_TOPIC_BYTES) == _messages(source.directory / "bag", ACTION_TOPIC_BYTES)
        episode = read_episode(digital)  # the training reader takes the digital episode like a recorded one
        real = read_episode(source.directory)
        assert np.array_equal(episode.actions, real.actions)
        assert np.array_equal(episode.stamps_s, real.stamps_s)
        assert episode.frames.shape == (source.frames, CFG.height, CFG.width, 3)
        assert np.array_equal(episode.frames[0], to_model_rgb(real.frames[0], CFG.height, CFG.width))
        assert episode.intrinsics.width == CFG.width and episode.intrinsics.fx == pytest.approx(real.intrinsics.fx * CFG.width / 96)
        summary = json.loads((digital / "episode.json").read_text())
        assert summary["mode"] == "digital" and summary["digital"]["source"]["bag_sha256"] == source.bag_sha256
    manifest = read_manifest(out)
    assert [e["output"] for e in manifest["episodes"]] == [s.output_name for s in sources]
    entry = manifest["episodes"][0]
    assert entry["reference"]["policy"] == "first" and entry["model"]["config"] == "tiny"
    assert entry["frames"] == sources[0].frames and entry["batch_size"] == 2 and entry["generated_at"]
    index = json.loads((out / "index.json").read_text())["episodes"]
    assert [e["source"] for e in index] == ["digital", "digital"]


@pytest.mark.slow
def test_reanchor_starts_each_81_frame_chunk_on_the_real_frame_at_that_time(value_root, tmp_path):
    out = tmp_path / "reanchor"
    source = find_sources([value_root / "value_task" / "episode_0000"])[0]
    _engine(out, Reference("reanchor"), batch_size=1).run([source])
    frames = read_episode(out / source.output_name).frames
    control = render_skeleton(*_skeleton(source), CFG.height, CFG.width)
    real = [to_model_rgb(_value_frame(k), CFG.height, CFG.width) for k in range(170)]
    assert len(frames) == 170 and np.array_equal(frames[0], real[0])
    # chunks of 81 frames (the reference + 80 generated): anchored on the real frames 0, 80 and 160,
    # so frames 81 and 161 show the real frame 80 / 160 wherever the hands have not been since
    for frame, anchor in ((81, 80), (161, 160)):
        keep = _far_from_hands(real[anchor], control[frame])
        assert keep.mean() > 0.5
        assert np.array_equal(frames[frame][keep], real[anchor][keep])
        assert not np.array_equal(frames[frame][keep], real[anchor - 1][keep])  # the anchor's own frame, not before
        assert not np.array_equal(frames[frame][keep], real[frame][keep])
    # the first chunk shows real frame 0 away from the hands
    keep = _far_from_hands(real[0], control[1])
    assert np.array_equal(frames[1][keep], real[0][keep])


def _skeleton(source):
    episode = read_episode(source.directory)
    return episode.joints_camera, episode.valid, episode.intrinsics


@pytest.mark.slow
def test_a_user_image_is_the_reference_of_every_episode(value_root, tmp_path):
    image_rgb = np.zeros((50, 90, 3), dtype=np.uint8)
    image_rgb[..., 0] = np.linspace(0, 255, 90, dtype=np.uint8)[None]
    image_rgb[..., 2] = 200
    path = tmp_path / "new_scene.png"
    cv2.imwrite(str(path), cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR))
    sources = find_sources([value_root])[1:]
    out = tmp_path / "digital"
    _engine(out, Reference("image", image_path=path), batch_size=2).run(sources)
    expected = to_model_rgb(image_rgb, CFG.height, CFG.width)
    for source in sources:
        digital = read_episode(out / source.output_name)
        assert np.array_equal(digital.frames[0], expected)
        assert not np.array_equal(digital.frames[0], to_model_rgb(_value_frame(0), CFG.height, CFG.width))
        control = render_skeleton(digital.joints_camera, digital.valid, digital.intrinsics, CFG.height, CFG.width)
        keep = _far_from_hands(expected, control[1])
        assert keep.mean() > 0.5 and np.array_equal(digital.frames[1][keep], expected[keep])
        entry = json.loads((out / source.output_name / "episode.json").read_text())["digital"]
        assert entry["reference"]["policy"] == "image" and len(entry["reference"]["image_sha256"]) == 64


@pytest.mark.slow
def test_an_interrupted_run_resumes_with_only_the_missing_episodes(value_root, tmp_path):
    out = tmp_path / "digital"
    sources = find_sources([value_root])[1:]  # the short ones
    done = []

    def crash_after_first(entry):
        done.append(entry["output"])
        raise KeyboardInterrupt("killed")

    with pytest.raises(KeyboardInterrupt):
        _engine(out, batch_size=1).run(sources, on_episode=crash_after_first)
    assert len(done) == 1 and len(read_manifest(out)["episodes"]) == 1
    first = out / done[0] / "episode.json"
    first_text, first_mtime = first.read_text(), first.stat().st_mtime_ns
    half = out / "value_task" / "episode_0002.partial"  # a run killed while writing an episode
    if not half.exists():
        (half / "bag").mkdir(parents=True)
        (half / "bag" / "junk.mcap").write_bytes(b"half")
    remaining = sorted(s.output_name for s in sources if s.output_name != done[0])
    assert sorted(s.output_name for s in _engine(out, batch_size=1).pending(sources)) == remaining
    again = _engine(out, batch_size=1).run(sources)
    assert sorted(e["output"] for e in again) == remaining
    assert first.read_text() == first_text and first.stat().st_mtime_ns == first_mtime
    assert not half.exists()
    manifest = read_manifest(out)
    assert sorted(e["output"] for e in manifest["episodes"]) == sorted(s.output_name for s in sources)
    assert _engine(out, batch_size=1).run(sources) == []  # complete: nothing to do
    with pytest.raises(EngineError, match="reference"):  # never mixed with another reference policy
        _engine(out, Reference("reanchor")).pending(sources)


def test_the_lerobot_dataset_reads_back_with_the_source_actions(task_root, tmp_path):
    out = tmp_path / "digital"
    sources = find_sources([task_root])
    _engine(out, batch_size=2, lerobot=True).run(sources)
    real = tmp_path / "real_lerobot"
    export_lerobot([s.directory / "bag" for s in sources], real, 16, progress=False)
    digital = pq.read_table(out / "lerobot" / "data" / "chunk-000" / "file-000.parquet").to_pydict()
    source = pq.read_table(real / "data" / "chunk-000" / "file-000.parquet").to_pydict()
    assert len(digital["action"]) == len(source["action"]) > 0
    assert np.array_equal(np.asarray(digital["action"], np.float32), np.asarray(source["action"], np.float32))
    assert np.array_equal(np.asarray(digital["observation.state"]), np.asarray(source["observation.state"]))
    assert set(digital["mode"]) == {1}  # digital
    info = json.loads((out / "lerobot" / "meta" / "info.json").read_text())
    assert info["total_episodes"] == 2 and info["features"]["observation.images.egocentric"]["shape"][:2] == [CFG.height, CFG.width]


def test_batch_of_streams_keeps_each_stream_on_its_own_reference():
    model = StreamingWorldModel(CFG, seed=0, batch_size=3)
    references = np.stack([np.full((CFG.height, CFG.width, 3), v, np.uint8) for v in (20, 120, 220)])
    model.reset(references)
    control = np.zeros((3, CFG.height, CFG.width, 3), np.uint8)
    control[:, 5:9, 5:9] = 255  # a small skeleton in one corner
    for j in range(1, 5):
        model.push_skeleton(control, stamp=j / CFG.fps)
    frames = model.step()
    assert frames.shape == (3, 4, CFG.height, CFG.width, 3)
    for b in range(3):
        assert (frames[b, :, 40:, 40:] == references[b, 40:, 40:]).all()
    with pytest.raises(ValueError, match="one per stream"):
        model.push_skeleton(control[:2], stamp=1.0)


@pytest.mark.slow
def test_the_cli_generates_and_resumes(value_root, tmp_path):
    out = tmp_path / "cli"
    command = [sys.executable, "-m", "rynn_world.engine", "--episodes", str(value_root / "value_task" / "episode_0001"),
               str(value_root / "value_task" / "episode_0003"), "--out", str(out), "--config", "tiny", "--device", "cpu",
               "--batch", "2", "--no-progress"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=300, env=node_env())
    assert first.returncode == 0, first.stderr
    assert "0 already done, 2 to generate" in first.stdout and "x real time" in first.stdout
    assert (out / "lerobot" / "meta" / "info.json").is_file()
    second = subprocess.run(command, capture_output=True, text=True, timeout=300, env=node_env())
    assert second.returncode == 0 and "2 already done, 0 to generate" in second.stdout
    manifest = read_manifest(out)
    assert len(manifest["episodes"]) == 2 and manifest["episodes"][0]["model"]["checkpoint"] == "none"
