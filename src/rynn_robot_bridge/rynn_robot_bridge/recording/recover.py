"""Rebuild a complete bag from an episode whose recorder died (SIGKILL, power cut) before closing it.

Such a bag has an MCAP file without its summary and footer and no metadata.yaml,
so neither ``ros2 bag`` nor ``rosbags`` opens it. Everything up to the last
complete record (the recorder flushes every ``flush_period_s``) is copied into a
fresh bag with metadata.yaml; the crashed original is kept as
``<episode>.truncated`` until the copy is complete, so a recovery that is itself
interrupted can simply be run again.

``python -m rynn_robot_bridge.recording.recover DIR...`` (episode or output directories).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
from pathlib import Path

from mcap.exceptions import EndOfFile
from mcap.records import Channel, Message, Schema
from mcap.stream_reader import StreamReader

from rynn_common.bag_types import make_typestore
from rynn_robot_bridge.recording.episode_bag import custom_data, write_json_atomically
from rynn_robot_bridge.recording.metadata import SIDECAR_NAME
from rynn_robot_bridge.recording.recorder import EPISODE_PATTERN
from rynn_robot_bridge.recording.rosbag2_mcap import Rosbag2McapWriter, parse_qos_yaml

MCAP_MAGIC = b"\x89MCAP0\r\n"
TRUNCATED_SUFFIX = ".truncated"


def needs_recovery(episode: Path) -> bool:
    return episode.is_dir() and not (episode / "metadata.yaml").is_file() and any(episode.glob("*.mcap"))


def find_incomplete(output_dir: Path) -> list[Path]:
    """Episodes left without metadata.yaml, and recoveries that were interrupted."""
    found = []
    for path in sorted(output_dir.iterdir()):
        name = path.name.removesuffix(TRUNCATED_SUFFIX)
        if EPISODE_PATTERN.match(name) and (path.name.endswith(TRUNCATED_SUFFIX) or needs_recovery(path)):
            found.append(output_dir / name)
    return sorted(set(found))


def complete_prefix_length(mcap_file: Path) -> int:
    """Byte length of the magic plus every complete top-level record (the torn tail is dropped); 0 for a file
    killed before its magic reached the disk (the writer buffers it: bench_soak's SIGKILL just after a start)."""
    size = mcap_file.stat().st_size
    with mcap_file.open("rb") as stream:
        magic = stream.read(len(MCAP_MAGIC))
        if len(magic) < len(MCAP_MAGIC) and MCAP_MAGIC.startswith(magic):
            return 0
        if magic != MCAP_MAGIC:
            raise ValueError(f"{mcap_file} is not an MCAP file")
        end = len(MCAP_MAGIC)
        while end + 9 <= size:
            stream.seek(end)
            _opcode, length = struct.unpack("<BQ", stream.read(9))
            if end + 9 + length > size:
                break
            end += 9 + length
    return end


def recover_episode(episode: Path) -> dict:
    """Rewrite ``episode`` as a complete bag; returns its summary (``state: "recovered"``)."""
    episode = Path(episode)
    original = episode.with_name(episode.name + TRUNCATED_SUFFIX)
    if original.exists():
        shutil.rmtree(episode, ignore_errors=True)  # a previous recovery stopped half-way
    else:
        os.replace(episode, original)
    mcap_files = sorted(original.glob("*.mcap"))
    if len(mcap_files) != 1:
        raise ValueError(f"{original}: expected one .mcap file, found {len(mcap_files)}")
    os.truncate(mcap_files[0], complete_prefix_length(mcap_files[0]))

    store = make_typestore()
    counts: dict[str, int] = {}
    writer = Rosbag2McapWriter(episode, store)
    schemas: dict[int, Schema] = {}
    topics: dict[int, str] = {}
    with mcap_files[0].open("rb") as stream:
        try:
            for record in StreamReader(stream).records:
                if isinstance(record, Schema):
                    schemas[record.id] = record
                elif isinstance(record, Channel):
                    offered = parse_qos_yaml(record.metadata.get("offered_qos_profiles", ""))
                    writer.add_topic(record.topic, schemas[record.schema_id].name, offered)
                    topics[record.id] = record.topic
                elif isinstance(record, Message):
                    writer.write(topics[record.channel_id], record.log_time, record.data)
                    counts[topics[record.channel_id]] = counts.get(topics[record.channel_id], 0) + 1
        except EndOfFile:
            pass  # the file ends after its last complete record: that is the point of recovery

    summary = _recovered_summary(original / SIDECAR_NAME, episode.name, counts)
    writer.custom_data.update(custom_data(summary))
    writer.close()
    write_json_atomically(episode / SIDECAR_NAME, summary)
    shutil.rmtree(original)
    return summary


def _recovered_summary(sidecar: Path, name: str, counts: dict[str, int]) -> dict:
    """The crashed episode's own sidecar (setup, counters at its last flush) with the recovered counts."""
    summary = json.loads(sidecar.read_text()) if sidecar.is_file() else {"episode": name, "modes_seen": []}
    topics = summary.get("topics", {})
    for topic in set(topics) | set(counts):
        entry = topics.setdefault(topic, {})
        entry["received_before_crash"] = entry.pop("received", 0)
        entry["written"] = counts.get(topic, 0)
    summary.update(episode=name, state="recovered", topics=topics, messages_written=sum(counts.values()))
    summary.pop("messages_received", None)
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="episode directories, or recorder output directories")
    args = parser.parse_args(argv)
    episodes = []
    for path in args.paths:
        episodes += [path] if EPISODE_PATTERN.match(path.name.removesuffix(TRUNCATED_SUFFIX)) else find_incomplete(path)
    for episode in episodes:
        summary = recover_episode(Path(str(episode).removesuffix(TRUNCATED_SUFFIX)))
        print(f"recovered {episode}: {summary['messages_written']} messages")
    if not episodes:
        print("nothing to recover")


if __name__ == "__main__":
    main()
