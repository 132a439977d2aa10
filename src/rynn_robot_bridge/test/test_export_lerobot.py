"""Recorded bags -> LeRobot v3, read back with pyarrow and a video decoder; bad bags are named or counted."""

from __future__ import annotations

import json
import subprocess
import sys

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from recorded_bags import HEIGHT, WIDTH, BagBuilder
from ros_test_tools import node_env
from rynn_common.action_layout import joint_names
from rynn_robot_bridge.export.bag_episode import EpisodeExportError, find_bags, load_episode
from rynn_robot_bridge.export.lerobot import IMAGE_KEY, export
from rynn_robot_bridge.recording.metadata import file_sha256


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    builder = BagBuilder(tmp_path_factory.mktemp("recordings"))
    digital = builder.episode("digital", "stack cups", bad_actions=3)
    real = builder.episode("real", "stack cups", seconds=1.5)
    return digital, real


def test_export_reads_back_with_pyarrow_and_a_video_decoder(bags, tmp_path):
    out = tmp_path / "dataset"
    info, skipped = export([bags[0].parent], out, fps=16, progress=False)
    assert skipped == {}
    assert info["codebase_version"] == "v3.0" and info["fps"] == 16 and info["total_episodes"] == 2
    features = info["features"]
    assert features["observation.state"]["shape"] == [54] and features["action"]["shape"] == [54]
    assert features["observation.state"]["names"] == joint_names()
    assert features[IMAGE_KEY]["dtype"] == "video" and features[IMAGE_KEY]["shape"] == [HEIGHT, WIDTH, 3]

    schema = pq.read_schema(out / "data/chunk-000/file-000.parquet")
    assert schema.field("observation.state").type == schema.field("action").type == pa.list_(pa.float32(), 54)
    data = pq.read_table(out / "data/chunk-000/file-000.parquet").to_pydict()
    episodes = pq.read_table(out / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    lengths = [e["length"] for e in episodes]
    assert lengths == [16, 24]  # 1.0 s and 1.5 s at 16 FPS (first to last common sample)
    assert info["total_frames"] == len(data["index"]) == sum(lengths)
    state, action = np.array(data["observation.state"]), np.array(data["action"])
    assert state.shape == action.shape == (40, 54)
    assert np.isfinite(action).all()  # the three NaN actions were skipped, not exported
    assert episodes[0]["skipped_messages"] == json.dumps({"action with NaN/inf": 3})
    assert data["mode"][:16] == [1] * 16 and data["mode"][16:] == [0] * 16 + [0] * 8
    assert [e["mode"] for e in episodes] == ["digital", "real"]
    assert data["episode_index"] == [0] * 16 + [1] * 24 and data["frame_index"][16] == 0
    np.testing.assert_allclose(data["timestamp"][:3], [0, 1 / 16, 2 / 16], rtol=1e-6)
    # latest-before resampling on the receive clock; episode 0 starts at its first valid action (the 4th, 15 ms)
    frame_times = 0.015 + np.arange(16) / 16
    np.testing.assert_allclose(state[:16, 0], np.floor(frame_times * 100 + 1e-6) / 100, atol=1e-6)
    np.testing.assert_allclose(action[:16, 0], np.floor(frame_times * 200 + 1e-6) / 200, atol=1e-6)

    tasks = pq.read_table(out / "meta/tasks.parquet").to_pydict()
    assert tasks == {"task_index": [0], "task": ["stack cups"]} and data["task_index"] == [0] * 40
    stats = json.loads((out / "meta/stats.json").read_text())
    assert stats["action"]["count"] == [40] and len(stats["observation.state"]["mean"]) == 54
    assert np.array(stats[IMAGE_KEY]["mean"]).shape == (3, 1, 1)
    # every feature LeRobot's writer has statistics for, the index features included, over the whole dataset
    assert set(stats) == set(info["features"])
    for name in ("timestamp", "frame_index", "episode_index", "index", "task_index", "mode"):
        values = np.asarray(data[name], dtype=np.float64)
        assert stats[name]["min"] == [values.min()] and stats[name]["max"] == [values.max()], name
        np.testing.assert_allclose(stats[name]["mean"], [values.mean()], rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(stats[name]["std"], [values.std()], rtol=1e-6, err_msg=name)
        assert stats[name]["count"] == [40]
    assert episodes[1]["stats/index/min"] == [16] and episodes[1]["stats/frame_index/max"] == [23]
    # the source bag by name and content hash, never by this machine's path
    assert [e["source_bag"] for e in episodes] == [bags[0].name, bags[1].name]
    assert episodes[0]["source_bag_sha256"] == file_sha256(next(bags[0].glob("*.mcap")))
    assert not any(str(tmp_path.parent) in json.dumps(e, default=str) for e in episodes)

    with av.open(str(out / f"videos/{IMAGE_KEY}/chunk-000/file-000.mp4")) as container:
        stream = container.streams.video[0]
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
        assert stream.average_rate == 16
    assert len(frames) == 40 and frames[0].shape == (HEIGHT, WIDTH, 3)
    assert episodes[1][f"videos/{IMAGE_KEY}/from_timestamp"] == pytest.approx(1.0)
    assert episodes[1][f"videos/{IMAGE_KEY}/to_timestamp"] == pytest.approx(2.5)
    assert abs(int(frames[0][..., 1].mean()) - 200) < 8 and abs(int(frames[20][..., 1].mean()) - 100) < 8  # digital, real
    # the image of frame k is the camera frame received last before it: red channel = 8 * camera frame number
    assert abs(int(frames[5][..., 0].mean()) - 8 * int(frame_times[5] * 30)) < 8


def test_bad_bags_are_named_or_counted(tmp_path):
    builder = BagBuilder(tmp_path / "recordings")
    no_camera = builder.episode("real", "t", seconds=0.5, skip_topic="image")
    wrong_size = builder.episode("real", "t", seconds=0.5, action_size=53)
    good = builder.episode("digital", "t", seconds=0.5)
    with pytest.raises(EpisodeExportError, match="missing topic.*image_raw"):
        load_episode(no_camera, 16)
    with pytest.raises(EpisodeExportError, match="action of size 53, expected 54"):
        load_episode(wrong_size, 16)
    info, skipped = export([tmp_path / "recordings"], tmp_path / "dataset", fps=16, progress=False)
    assert info["total_episodes"] == 1 and set(skipped) == {str(no_camera), str(wrong_size)}
    assert pq.read_table(tmp_path / "dataset/meta/episodes/chunk-000/file-000.parquet")["source_bag"].to_pylist() == [good.name]
    with pytest.raises(FileExistsError):
        export([good], tmp_path / "dataset", fps=16, progress=False)
    (good / "metadata.yaml").unlink()  # as a crashed recorder leaves it
    with pytest.raises(EpisodeExportError, match="recover"):
        find_bags([tmp_path / "recordings"])


def test_command_line_shows_progress_and_summary(bags, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "rynn_robot_bridge.export.lerobot", "--bags", str(bags[0]), str(bags[1]),
         "--out", str(tmp_path / "dataset"), "--fps", "16"],
        env=node_env(), capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "2 episodes, 40 frames at 16 FPS" in result.stdout and "episodes" in result.stderr  # tqdm on stderr
