"""Episode bookkeeping for the recorder node, free of ROS so it is tested on plain bytes.

Messages arrive already CDR-serialized (the node subscribes raw), so a bag holds
exactly the bytes that were on the wire. Latched topics (``/rynn/mode``,
transient local) are re-written at the start of every episode: a mode set long
before the episode began is still in its bag.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rynn_robot_bridge.episodes.bag_writer import make_typestore
from rynn_robot_bridge.recording.episode_bag import EpisodeBag, TopicCounts
from rynn_robot_bridge.recording.metadata import EpisodeSetup
from rynn_robot_bridge.recording.rosbag2_mcap import OfferedQos
from rynn_robot_bridge.recording.settings import RecorderSettings

EPISODE_PATTERN = re.compile(r"^episode_(\d{4,})$")
UNKNOWN_MODE = "unknown"


class RecorderError(RuntimeError):
    """A request that cannot be honoured in the current state (answered, never raised through ROS)."""


@dataclass
class LatchedSample:
    msgtype: str
    raw: bytes


@dataclass
class RecorderTotals:
    """Since the recorder started: per topic, and messages that arrived while no episode was recording."""

    topics: dict[str, TopicCounts] = field(default_factory=dict)
    idle: int = 0

    def for_topic(self, topic: str) -> TopicCounts:
        return self.topics.setdefault(topic, TopicCounts())


def next_episode_index(output_dir: Path, at_least: int = 0) -> int:
    """One above every episode (complete, crashed or being recovered) in ``output_dir``, and >= ``at_least``."""
    used = [int(m.group(1)) for p in output_dir.iterdir() if (m := EPISODE_PATTERN.match(p.name.split(".")[0]))]
    return max(max(used, default=-1) + 1, at_least)


class EpisodeRecorder:
    def __init__(self, settings: RecorderSettings):
        self.settings = settings
        self.output_dir = Path(settings.output_dir).expanduser().resolve()
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.typestore = make_typestore()
        self.mode = UNKNOWN_MODE
        self.episode: EpisodeBag | None = None
        self.totals = RecorderTotals()
        self.last_stopped: Path | None = None
        self._latched: dict[str, LatchedSample] = {}
        self.offered_qos: dict[str, list[OfferedQos]] = {}  # topic -> what its publishers offer (from the node)
        self._last_flush_s: float | None = None
        self._next_index = 0  # never reuse a name in one session, even a discarded episode's

    @property
    def recording(self) -> bool:
        return self.episode is not None

    def check_type(self, msgtype: str) -> None:
        """``KeyError`` naming the type when a bag could not describe it (checked before subscribing)."""
        if msgtype not in self.typestore.types:
            raise KeyError(f"message type {msgtype} is unknown to the bag typestore (not Jazzy, not rynn_teleop_msgs)")

    def offer(self, topic: str, msgtype: str, raw: bytes, stamp_ns: int) -> None:
        """One received message. A write error is counted as ``failed`` and re-raised for the caller to log."""
        if topic == self.settings.mode_topic:
            self.mode = str(self.typestore.deserialize_cdr(raw, msgtype).data)
            if self.episode is not None:
                self.episode.note_mode(self.mode)
        if topic in self.settings.latched_topics:
            self._latched[topic] = LatchedSample(msgtype, bytes(raw))
        totals = self.totals.for_topic(topic)
        totals.received += 1
        if self.episode is None:
            self.totals.idle += 1
            return
        try:
            self.episode.write(topic, msgtype, raw, stamp_ns)
        except Exception:
            totals.failed += 1
            raise
        totals.written += 1

    def note_lost(self, topic: str, count: int) -> bool:
        """Messages the transport reported lost (DDS sample-lost event): never silent. True when
        ``count`` was counted; Fast DDS also raises the event with a change of 0, which is no loss."""
        if count <= 0:
            return False
        self.totals.for_topic(topic).lost += count
        if self.episode is not None:
            self.episode.counts_for(topic).lost += count
        return True

    def start(self, task: str, operator_id: str, stamp_ns: int, monotonic_s: float) -> str:
        if self.episode is not None:
            raise RecorderError(f"already recording {self.episode.path.name}; stop or discard it first")
        setup = EpisodeSetup.create(task, operator_id, self.mode, self.settings.urdf_path,
                                    self.settings.world_model_checkpoint, stamp_ns)
        index = next_episode_index(self.output_dir, self._next_index)
        path = self.output_dir / f"episode_{index:04d}"
        self.episode = EpisodeBag(path, setup, self.typestore, self.offered_qos)
        self._next_index = index + 1
        self._last_flush_s = monotonic_s
        for topic, sample in self._latched.items():
            self.episode.write(topic, sample.msgtype, sample.raw, stamp_ns)
            self.totals.for_topic(topic).written += 1
        return path.name

    def stop(self) -> dict:
        episode = self._require_episode("stop")
        summary = episode.close()
        self.episode, self.last_stopped = None, episode.path
        return summary

    def discard(self) -> str:
        """Delete the episode being recorded, else the one stopped last; returns its name."""
        if self.episode is not None:
            episode, self.episode = self.episode, None
            episode.discard()
            return episode.path.name
        if self.last_stopped is None or not self.last_stopped.exists():
            raise RecorderError("nothing to discard: no episode recording and none stopped since start")
        path, self.last_stopped = self.last_stopped, None
        shutil.rmtree(path)
        return path.name

    def flush_if_due(self, monotonic_s: float) -> bool:
        if self.episode is None or self._last_flush_s is None:
            return False
        if monotonic_s - self._last_flush_s < self.settings.flush_period_s:
            return False
        self.episode.flush()
        self._last_flush_s = monotonic_s
        return True

    def close(self) -> None:
        """Shutdown: a recording episode is finished properly, not lost."""
        if self.episode is not None:
            self.stop()

    def _require_episode(self, verb: str) -> EpisodeBag:
        if self.episode is None:
            raise RecorderError(f"nothing to {verb}: no episode is recording")
        return self.episode
