"""Measured rate and age of each stream the console watches, and which required ones are stale.

Times are plain seconds: ``arrival`` on a monotonic clock, ``stamp`` on the clock of the
message headers (ROS time), so a frame's age is ``now_ros - stamp``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class StreamReading:
    """What the page shows for one stream."""

    fps: float  # messages per second over the recent window; 0 before two messages
    age_s: float | None  # now - header stamp of the newest message; None before the first
    silent_s: float | None  # now - arrival of the newest message; None before the first
    count: int


class StreamStats:
    """Messages that arrived within a sliding window -> FPS; the newest header stamp -> age.

    The rate is read off the header stamps of those messages when they carry stamps: a viewer the
    machine starves takes a backlog at once, and arrival times would then say a burst, then silence.
    """

    def __init__(self, window_s: float = 2.0, max_samples: int = 512):
        if window_s <= 0:
            raise ValueError(f"window_s must be positive, got {window_s}")
        self.window_s = window_s
        self._arrivals: deque[float] = deque(maxlen=max_samples)
        self._stamps: deque[float | None] = deque(maxlen=max_samples)
        self._newest_stamp: float | None = None
        self.count = 0

    def add(self, arrival: float, stamp: float | None = None) -> None:
        """One message arrived at monotonic ``arrival`` carrying header time ``stamp`` (if any)."""
        stamped = stamp is not None and stamp > 0.0
        self._arrivals.append(arrival)
        self._stamps.append(stamp if stamped else None)
        if stamped:
            self._newest_stamp = stamp
        self.count += 1

    def reading(self, now_monotonic: float, now_stamp_clock: float) -> StreamReading:
        recent = [(t, s) for t, s in zip(self._arrivals, self._stamps) if now_monotonic - t <= self.window_s]
        times = [s for _, s in recent] if all(s is not None for _, s in recent) else [t for t, _ in recent]
        span = max(times) - min(times) if len(times) >= 2 else 0.0
        fps = (len(times) - 1) / span if span > 0.0 else 0.0
        if not self._arrivals:
            return StreamReading(0.0, None, None, 0)
        silent = now_monotonic - self._arrivals[-1]
        age = now_stamp_clock - self._newest_stamp if self._newest_stamp is not None else silent
        return StreamReading(fps, age, silent, self.count)

    def reset(self) -> None:
        """Forget everything (the subscription went away with the last browser)."""
        self._arrivals.clear()
        self._stamps.clear()
        self._newest_stamp = None
        self.count = 0


@dataclass(frozen=True)
class RequiredStream:
    """A stream the session cannot run without, and how long it may stay silent."""

    topic: str
    label: str
    stale_after_s: float


@dataclass(frozen=True)
class Stage:
    """One stage of the pipeline that feeds a required stream: ``key`` names its reading (a topic, or a
    node's output counter); it is stalled once that reading is silent longer than ``stale_after_s``."""

    label: str
    key: str
    stale_after_s: float


def _silence(reading: StreamReading | None, stale_after_s: float, watching_for_s: float) -> str:
    """Why a reading is stale ("" when it is fresh)."""
    if reading is None or reading.silent_s is None:
        return "nothing received" if watching_for_s > stale_after_s else ""
    return f"silent for {reading.silent_s:.1f} s" if reading.silent_s > stale_after_s else ""


def stalled_stage(readings: dict[str, StreamReading], chain: tuple[Stage, ...], watching_for_s: float) -> str:
    """The first stage of ``chain`` (source first) whose output is stale: every stage before it is
    fresh, so that is where the stream stopped. "" when no stage of the chain is stale."""
    for index, stage in enumerate(chain):
        why = _silence(readings.get(stage.key), stage.stale_after_s, watching_for_s)
        if why:
            fed = f", its input {chain[index - 1].label} fresh" if index > 0 else ""
            return f"stalled stage: {stage.label} ({stage.key} {why}{fed})"
    return ""


def stale_banner(readings: dict[str, StreamReading], required: list[RequiredStream], watching_for_s: float,
                 chains: dict[str, tuple[Stage, ...]] | None = None) -> str:
    """One line naming every required stream that is silent too long (or never came once the
    console has watched longer than its limit), each with the stage that stalled it when ``chains``
    gives the stages that feed it; empty when all are fresh."""
    problems = []
    for stream in required:
        why = _silence(readings.get(stream.topic), stream.stale_after_s, watching_for_s)
        if why:
            stage = stalled_stage(readings, (chains or {}).get(stream.topic, ()), watching_for_s)
            problems.append(f"{stream.label} ({stream.topic}): {why}" + (f", {stage}" if stage else ""))
    return "STALE: " + "; ".join(problems) if problems else ""
