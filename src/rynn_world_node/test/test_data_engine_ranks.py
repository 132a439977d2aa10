"""The data engine over two processes (torchrun, gloo, CPU): the same digital episodes as one process,
one manifest and one LeRobot dataset, and a resumed launch that redoes only what a killed rank left
unfinished.

"The same" is compared by content, not by file bytes: each episode records when it was made and how
long it took (generated_at, generation_s; the manifest's updated_at), which differ between any two
runs, one process or two, and so does the digest of each bag file, which the LeRobot dataset's
episode table records (source_bag_sha256). Everything else is compared byte for byte: every bag
message (generated images and CameraInfo, copied actions, joint states and skeletons), the episode
summary without those fields, frames.npz, the manifest's entries and the LeRobot dataset's files
(its episode table without that column).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore
from test_data_engine import INFO, _write_value_episode

from ros_test_tools import node_env
from rynn_robot_bridge.episodes.bag_writer import TOPICS
from rynn_robot_bridge.episodes.layout import write_index
from rynn_robot_bridge.export.bag_episode import bag_sha256
from rynn_world.engine import DataEngine, EngineSettings, find_sources, read_manifest

TIMING = ("generated_at", "generation_s")
EPISODE_TOPIC = TOPICS["episode"][0]
EPISODE_TABLE = "meta/episodes/chunk-000/file-000.parquet"
# five episodes in batches of two: [2, 2, 1] by length, rank 0 making the first and the padded last
LENGTHS = (33, 41, 29, 37, 45)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("value_episodes")
    for index, frames in enumerate(LENGTHS):
        _write_value_episode(root, "value_task", index, frames, seed=index)
    write_index(root)
    return root


def engine(sources: Path, out: Path, processes: int) -> str:
    """The engine's command line, one process or two started by torchrun (its standalone rendezvous binds a
    free port itself). One torch thread each, so one and two processes compute alike."""
    arguments = ["-m", "rynn_world.engine", "--episodes", str(sources), "--out", str(out), "--config", "tiny",
                 "--device", "cpu", "--batch", "2", "--threads", "1", "--no-progress"]
    command = [sys.executable, *arguments] if processes == 1 else \
        [str(Path(sys.executable).parent / "torchrun"), "--standalone", "--nproc-per-node", str(processes), *arguments]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=dict(node_env(), OMP_NUM_THREADS="1"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result.stdout


def without_timing(summary: dict) -> dict:
    digital = {k: v for k, v in summary["digital"].items() if k not in TIMING}
    return {**summary, "digital": digital}


def episode_content(directory: Path) -> dict:
    """Everything an episode holds, its making's timing left out (module docstring)."""
    strings = get_typestore(Stores.ROS2_HUMBLE)
    messages = []
    with Reader(directory / "bag") as reader:
        for connection, stamp, raw in reader.messages():
            if connection.topic == EPISODE_TOPIC:
                summary = json.loads(strings.deserialize_cdr(bytes(raw), "std_msgs/msg/String").data)
                messages.append((connection.topic, stamp, without_timing(summary)))
            else:
                messages.append((connection.topic, stamp, bytes(raw)))
    with np.load(directory / "frames.npz") as arrays:
        frames = {name: arrays[name].tobytes() for name in arrays}
    return {"messages": messages, "frames.npz": frames,
            "episode.json": without_timing(json.loads((directory / "episode.json").read_text()))}


def manifest_entries(out: Path) -> list[dict]:
    return [{k: v for k, v in entry.items() if k not in TIMING} for entry in read_manifest(out)["episodes"]]


def lerobot_content(out: Path) -> dict:
    """The LeRobot dataset's files; its episode table without the digests of the bag files (checked here)."""
    root = out / "lerobot"
    files = {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}
    table = files.pop(EPISODE_TABLE)
    episodes = pq.read_table(pa.BufferReader(table)).to_pydict()
    digests = episodes.pop("source_bag_sha256")
    assert digests == [bag_sha256(out / entry["output"] / "bag") for entry in read_manifest(out)["episodes"]]
    return {**files, EPISODE_TABLE: episodes}


@pytest.mark.slow
def test_two_processes_make_the_episodes_of_one_and_resume_what_a_killed_rank_left(sources, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    engine(sources, one, processes=1)
    printed = engine(sources, two, processes=2)
    assert "5 source episodes, 0 already done, 5 to generate" in printed and "2 processes" in printed
    planned = DataEngine(two, None, INFO, EngineSettings(batch_size=2)).batches(find_sources([sources]))
    by_rank = {rank: [s.output_name for index, batch in enumerate(planned) if index % 2 == rank for s in batch]
               for rank in (0, 1)}
    assert [len(names) for names in by_rank.values()] == [3, 2]
    for rank, names in by_rank.items():  # each rank reports its own share
        assert f"rank {rank}/2: generated {len(names)} episodes" in printed

    names = [s.output_name for s in find_sources([sources])]
    assert manifest_entries(two) == manifest_entries(one) and len(manifest_entries(two)) == 5
    for name in names:
        assert episode_content(two / name) == episode_content(one / name), name
    assert lerobot_content(two) == lerobot_content(one)
    assert json.loads((two / "lerobot" / "meta" / "info.json").read_text())["total_episodes"] == 5

    # rank 1 killed while writing its second episode, after the first: that one complete, the second
    # half-written, no LeRobot dataset yet (the last step of a run)
    finished, unfinished = (two / name for name in by_rank[1])
    shutil.rmtree(unfinished)
    (unfinished.parent / (unfinished.name + ".partial") / "bag").mkdir(parents=True)
    shutil.rmtree(two / "lerobot")
    kept = {name: os.stat(two / name / "episode.json").st_mtime_ns for name in names if two / name != unfinished}
    printed = engine(sources, two, processes=2)
    assert "5 source episodes, 4 already done, 1 to generate" in printed
    assert "rank 1/2: generated 1 episodes" in printed and "rank 0/2: generated" not in printed
    assert {name: os.stat(two / name / "episode.json").st_mtime_ns for name in kept} == kept  # finished ones untouched
    assert not (unfinished.parent / (unfinished.name + ".partial")).exists()
    assert episode_content(unfinished) == episode_content(one / unfinished.relative_to(two))
    assert episode_content(finished) == episode_content(one / finished.relative_to(two))
    assert manifest_entries(two) == manifest_entries(one)
    assert lerobot_content(two) == lerobot_content(one)
