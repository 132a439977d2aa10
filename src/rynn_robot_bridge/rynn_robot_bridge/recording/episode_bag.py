"""One episode's rosbag2 MCAP bag, written by the shared Jazzy writer from already-serialized CDR messages.

The bag directory holds ``<name>.mcap``, ``metadata.yaml`` (written on close, so
``ros2 bag info/play`` and Foxglove open it) and ``episode_info.json`` (setup and
per-topic counters, rewritten at every flush so a crashed episode still says
what it is; ``recover.py`` rebuilds metadata.yaml from the MCAP file). Each topic
carries the QoS its publishers offered (``offered_qos``, filled by the node from the
ROS graph), so ``ros2 bag play`` republishes latched topics latched.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

from rynn_robot_bridge.recording.disk_space import RESERVE_NAME, SpaceReserve, open_file
from rynn_robot_bridge.recording.metadata import SIDECAR_NAME, EpisodeSetup
from rynn_robot_bridge.recording.rosbag2_mcap import OfferedQos, Rosbag2McapWriter


@dataclass
class TopicCounts:
    """received = written + failed + dropped (+ still queued while recording); dropped: the write queue
    was full (a slow disk) or its episode stopped first; lost = dropped by the transport before reaching us."""

    received: int = 0
    written: int = 0
    failed: int = 0
    lost: int = 0
    dropped: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"received": self.received, "written": self.written, "failed": self.failed, "lost": self.lost,
                "dropped": self.dropped}


def write_json_atomically(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)


class EpisodeBag:
    """An open episode bag: ``write`` serialized messages, ``flush`` regularly, then ``close`` or ``discard``.

    ``reserve_bytes`` of the volume are claimed first (``OSError`` when it has not that much free): the
    space that closing the bag needs once the volume is full (rynn_robot_bridge.recording.disk_space).
    """

    def __init__(self, path: Path, setup: EpisodeSetup, typestore,
                 offered_qos: dict[str, list[OfferedQos]] | None = None, reserve_bytes: int = 0,
                 opener: Callable[[Path], BinaryIO] = open_file):
        self.path = Path(path)
        self.setup = setup
        self.counts: dict[str, TopicCounts] = {}
        self.modes_seen: list[str] = [] if setup.mode == "unknown" else [setup.mode]
        self.offered_qos = offered_qos if offered_qos is not None else {}  # topic -> its publishers' QoS
        self.path.mkdir(parents=True, exist_ok=False)
        self.reserve = SpaceReserve(self.path / RESERVE_NAME, reserve_bytes)
        try:
            self.reserve.claim()
            self._writer = Rosbag2McapWriter(self.path, typestore, self.reserve, opener)
            self.write_sidecar(state="recording")
        except BaseException:
            shutil.rmtree(self.path, ignore_errors=True)
            raise

    def counts_for(self, topic: str) -> TopicCounts:
        return self.counts.setdefault(topic, TopicCounts())

    @property
    def disk_full(self) -> bool:
        """The volume filled: the episode must stop (the reserve holds its closing writes)."""
        return self._writer.disk_full

    def write(self, topic: str, msgtype: str, raw: bytes, stamp_ns: int) -> None:
        """Write one message the caller counted as received (``failed`` counted and the error re-raised)."""
        counts = self.counts_for(topic)
        try:
            if topic not in self._writer.topics:
                self._writer.add_topic(topic, msgtype, self.offered_qos.get(topic, []))
            self._writer.write(topic, stamp_ns, raw)
        except Exception:
            counts.failed += 1
            raise
        counts.written += 1

    def note_mode(self, mode: str) -> None:
        if not self.modes_seen or self.modes_seen[-1] != mode:
            self.modes_seen.append(mode)

    @property
    def mode(self) -> str:
        """The mode at the start, or the first one seen when /rynn/mode had not arrived yet."""
        return self.modes_seen[0] if self.modes_seen else self.setup.mode

    def summary(self, state: str) -> dict:
        return {
            **self.setup.as_dict(),
            "mode": self.mode,
            "episode": self.path.name,
            "state": state,
            "modes_seen": list(self.modes_seen),
            "topics": {topic: c.as_dict() for topic, c in sorted(self.counts.items())},
            "messages_received": sum(c.received for c in self.counts.values()),
            "messages_written": sum(c.written for c in self.counts.values()),
        }

    def write_sidecar(self, state: str) -> dict:
        summary = self.summary(state)
        write_json_atomically(self.path / SIDECAR_NAME, summary)
        return summary

    def flush(self) -> None:
        """Everything written so far reaches the file; a SIGKILL after this loses nothing before it."""
        self._writer.flush()
        self.write_sidecar(state="recording")

    def close(self, state: str = "complete") -> dict:
        """Finish the MCAP file and metadata.yaml (custom_data carries the setup and counters), then give
        the reserve back. ``state`` says why it ended (``complete``, or e.g. ``stopped_disk_full``)."""
        summary = self.summary(state=state)
        self._writer.custom_data.update(custom_data(summary))
        self.reserve.release()  # its space is what a full volume has left for the closing writes
        self._writer.close()
        write_json_atomically(self.path / SIDECAR_NAME, summary)
        return summary

    def abort(self) -> None:
        """Leave the bag as it is on disk (complete records, no summary: ``recover.py`` rebuilds it)."""
        self._writer.abort()
        self.reserve.release()

    def discard(self) -> None:
        self._writer.abort()
        shutil.rmtree(self.path, ignore_errors=True)


def custom_data(summary: dict) -> dict[str, str]:
    """metadata.yaml custom_data (string values only): the setup fields plus the counters as JSON."""
    flat = {k: str(v) for k, v in summary.items() if not isinstance(v, (dict, list))}
    flat["modes_seen"] = ",".join(summary["modes_seen"])
    flat["topic_counts"] = json.dumps(summary["topics"], sort_keys=True)
    return flat
