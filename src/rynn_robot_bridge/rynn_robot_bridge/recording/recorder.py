"""Episode bookkeeping for the recorder node, free of ROS so it is tested on plain bytes.

Messages arrive already CDR-serialized (the node subscribes raw), so a bag holds
exactly the bytes that were on the wire. Latched topics (``/rynn/mode``,
transient local) are re-written at the start of every episode: a mode set long
before the episode began is still in its bag.

``offer`` never touches the disk: a message joins a write queue bounded in bytes and in
messages, and one writer thread writes the queue into the bag in order (taking what was queued at
least every ``write_interval_s``, not woken per message), with the periodic
flushes and, last, the episode's close (``stop``) or deletion (``discard``). A disk that
stalls therefore stalls only that thread: the queue fills, and messages that find it full
are dropped and counted (``dropped``) instead of stalling the subscriptions that offer
them. ``start``, ``stop`` and ``discard`` wait for the disk at most ``timeout`` seconds
(the node: ``service_wait_s``), then raise ``RecorderBusy``; a stop or discard still
happens, once the disk has taken what was queued before it.

A volume that fills stops the episode cleanly (rynn_robot_bridge.recording.disk_space): the
bag is closed on its space reserve with every message written before, the episode's state is
``stopped_disk_full``, ``fault`` says so until an episode starts again, and a new episode
starts as soon as the volume has room for its reserve.
"""

from __future__ import annotations

import re
import shutil
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable

from rynn_common.bag_types import make_typestore
from rynn_robot_bridge.recording.disk_space import is_disk_full, open_file
from rynn_robot_bridge.recording.episode_bag import EpisodeBag, TopicCounts
from rynn_robot_bridge.recording.metadata import EpisodeSetup
from rynn_robot_bridge.recording.rosbag2_mcap import OfferedQos
from rynn_robot_bridge.recording.settings import RecorderSettings

EPISODE_PATTERN = re.compile(r"^episode_(\d{4,})$")
UNKNOWN_MODE = "unknown"
MIB = 1 << 20
DISK_FULL_STATE = "stopped_disk_full"


class RecorderError(RuntimeError):
    """A request that cannot be honoured in the current state (answered, never raised through ROS)."""


class RecorderBusy(RecorderError):
    """The disk has not taken the request's writes in time (it still happens, for a stop or discard)."""


@dataclass
class LatchedSample:
    msgtype: str
    raw: bytes


@dataclass
class _Queued:
    """Work for the writer thread, in order: a message (``topic``), else a ``flush``, ``close`` or ``discard``."""

    episode: EpisodeBag
    topic: str | None = None
    msgtype: str = ""
    raw: bytes = b""
    stamp_ns: int = 0
    command: str = ""
    done: threading.Event | None = None  # a close or discard's: set once done (a message needs none)
    result: object = None
    error: BaseException | None = None


@dataclass
class RecorderTotals:
    """Since the recorder started: per topic, and messages that arrived while no episode was recording."""

    topics: dict[str, TopicCounts] = field(default_factory=dict)
    idle: int = 0

    def for_topic(self, topic: str) -> TopicCounts:
        return self.topics.setdefault(topic, TopicCounts())


@dataclass(frozen=True)
class RecorderSnapshot:
    totals: dict[str, TopicCounts]
    idle: int
    mode: str
    episode: str  # the recording episode's name, "" when none
    episode_counts: dict[str, TopicCounts]
    fault: str | None
    queued_messages: int
    queued_bytes: int


def next_episode_index(output_dir: Path, at_least: int = 0) -> int:
    """One above every episode (complete, crashed or being recovered) in ``output_dir``, and >= ``at_least``."""
    used = [int(m.group(1)) for p in output_dir.iterdir() if (m := EPISODE_PATTERN.match(p.name.split(".")[0]))]
    return max(max(used, default=-1) + 1, at_least)


class EpisodeRecorder:
    """Thread-safe: ``offer`` and ``note_lost`` from subscriptions, the rest from services and timers.
    ``opener`` makes each bag's file (tests pass a slow or failing one)."""

    def __init__(self, settings: RecorderSettings, opener: Callable[[Path], BinaryIO] = open_file):
        self.settings = settings
        self.output_dir = Path(settings.output_dir).expanduser().resolve()
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.typestore = make_typestore()
        self.mode = UNKNOWN_MODE
        self.episode: EpisodeBag | None = None
        self.totals = RecorderTotals()
        self.last_stopped: Path | None = None
        self.fault: str | None = None  # why the last episode stopped by itself (a full volume), until a new start
        self.last_fault_summary: dict | None = None
        self._latched: dict[str, LatchedSample] = {}
        self.offered_qos: dict[str, list[OfferedQos]] = {}  # topic -> what its publishers offer (from the node)
        self._last_flush_s: float | None = None
        self._next_index = 0  # never reuse a name in one session, even a discarded episode's
        self._opener = opener
        self._max_queue_bytes = int(settings.queue_max_mb * MIB)
        self._write_interval_s = settings.write_interval_s
        self._lock = threading.Condition()  # counters, the queue, ``episode``: held for microseconds
        self._io = threading.Lock()  # the bag files: held by whoever writes (the writer thread, start, stop)
        self._queue: deque[_Queued] = deque()
        self._queued_bytes = 0
        self._writing: _Queued | None = None
        self._closing = False
        self._writer = threading.Thread(target=self._write_loop, name="recorder-writer", daemon=True)
        self._writer.start()

    @property
    def recording(self) -> bool:
        return self.episode is not None

    def snapshot(self) -> "RecorderSnapshot":
        """The counters, the episode and the fault, copied at one instant (for status reports)."""
        with self._lock:
            episode = self.episode
            return RecorderSnapshot(
                totals={topic: TopicCounts(**c.as_dict()) for topic, c in self.totals.topics.items()},
                idle=self.totals.idle, mode=self.mode,
                episode=episode.path.name if episode else "",
                episode_counts={topic: TopicCounts(**c.as_dict()) for topic, c in episode.counts.items()} if episode else {},
                fault=self.fault, queued_messages=len(self._queue), queued_bytes=self._queued_bytes)

    @property
    def queued(self) -> tuple[int, int]:
        """(messages, bytes) waiting for the writer thread."""
        with self._lock:
            return len(self._queue), self._queued_bytes

    def check_type(self, msgtype: str) -> None:
        """``KeyError`` naming the type when a bag could not describe it (checked before subscribing)."""
        if msgtype not in self.typestore.types:
            raise KeyError(f"message type {msgtype} is unknown to the bag typestore (not Jazzy, not rynn_teleop_msgs)")

    def offer(self, topic: str, msgtype: str, raw: bytes, stamp_ns: int) -> None:
        """One received message: queued for the bag when an episode records, never written here. A type the
        bag cannot describe is counted as ``failed`` and raised (``KeyError``)."""
        mode = str(self.typestore.deserialize_cdr(raw, msgtype).data) if topic == self.settings.mode_topic else None
        with self._lock:
            if mode is not None:
                self.mode = mode
                if self.episode is not None:
                    self.episode.note_mode(mode)
            if topic in self.settings.latched_topics:
                self._latched[topic] = LatchedSample(msgtype, bytes(raw))
            totals = self.totals.for_topic(topic)
            totals.received += 1
            episode = self.episode
            if episode is None:
                self.totals.idle += 1
                return
            counts = episode.counts_for(topic)
            counts.received += 1
            if msgtype not in self.typestore.types:
                counts.failed += 1
                totals.failed += 1
                self.check_type(msgtype)
            if len(self._queue) >= self.settings.queue_max_messages or self._queued_bytes + len(raw) > self._max_queue_bytes:
                counts.dropped += 1
                totals.dropped += 1
                return
            self._enqueue(_Queued(episode, topic, msgtype, bytes(raw), stamp_ns))

    def _enqueue(self, item: _Queued) -> None:
        """Under ``_lock``. A message wakes the writer thread only without a ``write_interval_s``."""
        self._queue.append(item)
        self._queued_bytes += len(item.raw)
        if item.topic is None or not self._write_interval_s:
            self._lock.notify_all()

    def note_lost(self, topic: str, count: int) -> bool:
        """Messages the transport reported lost (DDS sample-lost event): never silent. True when
        ``count`` was counted; Fast DDS also raises the event with a change of 0, which is no loss."""
        if count <= 0:
            return False
        with self._lock:
            self.totals.for_topic(topic).lost += count
            if self.episode is not None:
                self.episode.counts_for(topic).lost += count
        return True

    def start(self, task: str, operator_id: str, stamp_ns: int, monotonic_s: float,
              timeout: float | None = None) -> str:
        """``RecorderError`` while recording, ``RecorderBusy`` when the disk did not take a write for
        ``timeout`` s, ``OSError`` when the volume cannot hold the episode's reserve."""
        with self._lock:
            if self.episode is not None:
                raise RecorderError(f"already recording {self.episode.path.name}; stop or discard it first")
            mode = self.mode
        setup = EpisodeSetup.create(task, operator_id, mode, self.settings.urdf_path,
                                    self.settings.world_model_checkpoint, stamp_ns)
        if not self._io.acquire(timeout=-1 if timeout is None else timeout):
            raise RecorderBusy(f"the disk has not taken a write for {timeout:g} s; no episode started")
        try:
            index = next_episode_index(self.output_dir, self._next_index)
            path = self.output_dir / f"episode_{index:04d}"
            try:
                episode = EpisodeBag(path, setup, self.typestore, self.offered_qos,
                                     int(self.settings.disk_reserve_mb * MIB), self._opener)
            except OSError as error:
                if is_disk_full(error):
                    raise OSError(error.errno, f"no room on {self.output_dir} for a new episode (it needs "
                                  f"{self.settings.disk_reserve_mb:g} MiB free for its reserve)") from error
                raise
            self._next_index = index + 1
        finally:
            self._io.release()
        with self._lock:
            self.episode = episode
            self.fault = self.last_fault_summary = None
            self._last_flush_s = monotonic_s
            for topic, sample in self._latched.items():  # first in the bag, before anything offered from now on
                episode.counts_for(topic).received += 1
                self.totals.for_topic(topic).received += 1
                self._enqueue(_Queued(episode, topic, sample.msgtype, sample.raw, stamp_ns))
        return path.name

    def stop(self, timeout: float | None = None) -> dict:
        """The episode takes no more messages; its bag is closed after its queued messages are written.
        Returns its summary; ``RecorderBusy`` if that took more than ``timeout`` s (it closes later)."""
        return self._finish("stop", "close", timeout)

    def discard(self, timeout: float | None = None) -> str:
        """Delete the episode being recorded, else the one stopped last; returns its name."""
        with self._lock:
            recording = self.episode is not None
            if not recording:
                if self.last_stopped is None or not self.last_stopped.exists():
                    raise RecorderError("nothing to discard: no episode recording and none stopped since start")
                path, self.last_stopped = self.last_stopped, None
        if recording:
            return self._finish("discard", "discard", timeout)
        shutil.rmtree(path)
        return path.name

    def _finish(self, verb: str, command: str, timeout: float | None):
        with self._lock:
            episode = self._require_episode(verb)
            self.episode = None
            item = _Queued(episode, command=command, done=threading.Event())
            self._enqueue(item)
            pending = sum(1 for queued in self._queue if queued.episode is episode) - 1
        if not item.done.wait(timeout):
            raise RecorderBusy(f"{episode.path.name} takes no more messages; its {pending} queued ones wait for a slow "
                               f"disk, then it is {'closed' if command == 'close' else 'deleted'}")
        if item.error is not None:
            raise item.error
        return item.result

    def _drop_queued(self, episode: EpisodeBag) -> int:
        """Under ``_lock``: the episode's queued messages are dropped (counted); returns how many."""
        kept, dropped = deque(), 0
        for item in self._queue:
            if item.episode is not episode or item.topic is None:
                kept.append(item)
            else:
                episode.counts_for(item.topic).dropped += 1
                self.totals.for_topic(item.topic).dropped += 1
                self._queued_bytes -= len(item.raw)
                dropped += 1
        self._queue = kept
        return dropped

    def flush_if_due(self, monotonic_s: float) -> bool:
        """Queue a flush of the episode (done by the writer thread, after what is queued before it)."""
        with self._lock:
            if self.episode is None or self._last_flush_s is None:
                return False
            if monotonic_s - self._last_flush_s < self.settings.flush_period_s:
                return False
            self._enqueue(_Queued(self.episode, command="flush"))
            self._last_flush_s = monotonic_s
        return True

    def drain(self, timeout: float) -> bool:
        """Wait until the writer thread has written everything queued; False on timeout."""
        with self._lock:
            self._lock.notify_all()  # the writer thread takes the queue now, not at its next interval
            return self._lock.wait_for(lambda: not self._queue and self._writing is None, timeout=timeout)

    def close(self) -> None:
        """Shutdown: a recording episode is finished properly, not lost; the writer thread ends."""
        with self._lock:
            recording = self.episode is not None
        if recording:
            try:
                self.stop(timeout=self.settings.stop_timeout_s)
            except RecorderBusy:
                pass  # a stalled disk: the bag ends at its last flush (recovered at the next start)
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        self._writer.join(timeout=self.settings.stop_timeout_s)

    def _require_episode(self, verb: str) -> EpisodeBag:
        if self.episode is None:
            raise RecorderError(f"nothing to {verb}: no episode is recording")
        return self.episode

    # --- the writer thread -------------------------------------------------------------------

    def _write_loop(self) -> None:
        while True:
            with self._lock:
                if not self._lock.wait_for(lambda: self._queue or self._closing, timeout=self._write_interval_s or None):
                    continue  # nothing queued in this interval
                if not self._queue:
                    return
                item = self._writing = self._queue.popleft()
                self._queued_bytes -= len(item.raw)
            try:
                self._write(item)
            finally:
                with self._lock:
                    self._writing = None
                    self._lock.notify_all()

    def _write(self, item: _Queued) -> None:
        episode, error = item.episode, None
        with self._io:
            try:
                if item.command == "close":
                    item.result = episode.close(DISK_FULL_STATE if episode.disk_full else "complete")
                elif item.command == "discard":
                    episode.discard()
                    item.result = episode.path.name
                elif item.command == "flush":
                    episode.flush()
                else:
                    episode.write(item.topic, item.msgtype, item.raw, item.stamp_ns)
            except Exception as exc:  # a message's is counted (failed) by the bag; a full volume stops the episode
                error = exc
        with self._lock:
            if item.topic is not None:
                totals = self.totals.for_topic(item.topic)
                if error is None:
                    totals.written += 1
                else:
                    totals.failed += 1
            if item.command == "close" and error is None:
                self.last_stopped = episode.path
        if item.command in ("close", "discard"):
            item.error = error
            item.done.set()
        elif episode.disk_full or is_disk_full(error):
            self._stop_on_full_disk(episode)

    def _stop_on_full_disk(self, episode: EpisodeBag) -> None:
        """Writer thread: the volume is full. The episode stops taking messages, what it had queued is
        dropped (counted), and it is closed on its reserve (or left for ``recover.py`` if even that fails)."""
        with self._lock:
            if self.episode is not episode:
                return  # a stop or discard came first: its command closes it
            self.episode = None
            self.last_stopped = episode.path
            dropped = self._drop_queued(episode)
        written = sum(c.written for c in episode.counts.values())
        with self._io:
            try:
                summary = episode.close(state=DISK_FULL_STATE)
                fault = (f"the volume of {self.output_dir} is full: episode {episode.path.name} stopped with "
                         f"{written} messages written ({dropped} queued ones dropped); free space, then start a new one")
            except OSError as error:
                episode.abort()
                summary = episode.summary(state=DISK_FULL_STATE)
                fault = (f"the volume of {self.output_dir} is full: episode {episode.path.name} stopped, and closing it "
                         f"failed ({error}); its bag ends at its last complete record (python -m "
                         "rynn_robot_bridge.recording.recover rebuilds it)")
        with self._lock:
            self.fault, self.last_fault_summary = fault, summary
