"""Drive a node from any operator source: each frame goes to a callback, on a
background thread, paced by the source.

The synthetic operator is sampled on the wall clock instead of iterated, so
the tracker and glove processes, started at different moments, still play the
same motion at the same instant (``frame_at(time - epoch)``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from rynn_common.ros_names import HANDS_TOPIC
from rynn_retarget.operator.frame import TRACKER_NAMES, OperatorFrame, OperatorFrames, OperatorSource
from rynn_retarget.operator.synthetic import FRAME_PARTS, SyntheticOperator, SyntheticOperatorConfig

SOURCE_KINDS = ("synthetic", "replay", "udp", "openvr")


@dataclass(frozen=True)
class SyntheticInput:
    motion: str = "all"
    seed: int = 0
    period_s: float = 4.0
    epoch_s: float = 0.0  # synthetic time = wall time - epoch_s


@dataclass(frozen=True)
class ReplayInput:
    path: str = ""  # a recorded operator session file
    loop: bool = True


@dataclass(frozen=True)
class UdpInput:
    host: str = "0.0.0.0"
    port: int = 9870


@dataclass(frozen=True)
class SourceSettings:
    """What a tracker or glove node needs to open its source (its ROS parameters: ``source``,
    ``rate_hz``, ``synthetic.*``, ``replay.*``, ``udp.*``)."""

    source: str = "synthetic"  # one of SOURCE_KINDS
    rate_hz: float = 120.0
    # Composed with the retarget node (the operator container), which takes every sample in-process: at most
    # this many a second also go out on DDS, for the recorder (a replayed bag feeds the solver at its own
    # max_solve_rate_hz, 30) and the viewers (the console draws at <= 30 Hz); 0 = every sample. In its own
    # process the node publishes every sample (its subscribers are all elsewhere).
    dds_rate_hz: float = 30.0
    synthetic: SyntheticInput = field(default_factory=SyntheticInput)
    replay: ReplayInput = field(default_factory=ReplayInput)
    udp: UdpInput = field(default_factory=UdpInput)


@dataclass(frozen=True)
class OpenVrInput:
    serials: list[str] = field(default_factory=lambda: [f"{name}:" for name in TRACKER_NAMES])  # "role:serial"

    def by_role(self) -> dict[str, str]:
        """Tracker role -> serial number, for the roles given one."""
        return dict(entry.split(":", 1) for entry in self.serials if entry.split(":", 1)[1])


@dataclass(frozen=True)
class TrackerNodeSettings(SourceSettings):
    frames: OperatorFrames = field(default_factory=OperatorFrames)
    openvr: OpenVrInput = field(default_factory=OpenVrInput)


@dataclass(frozen=True)
class WristFrames:
    left_wrist: str = OperatorFrames.left_wrist
    right_wrist: str = OperatorFrames.right_wrist


@dataclass(frozen=True)
class GloveNodeSettings(SourceSettings):
    udp: UdpInput = field(default_factory=lambda: UdpInput(port=9871))
    topic: str = HANDS_TOPIC
    frames: WristFrames = field(default_factory=WristFrames)


def open_source(settings: SourceSettings, openvr_serials: dict[str, str] | None = None) -> OperatorSource:
    """The configured source; ValueError for an unknown kind, DeviceUnavailableError for absent devices."""
    if settings.source == "synthetic":
        return SyntheticOperator(
            SyntheticOperatorConfig(motion=settings.synthetic.motion, seed=settings.synthetic.seed,
                                    period_s=settings.synthetic.period_s, rate_hz=settings.rate_hz)
        )
    if settings.source == "replay":
        from rynn_retarget.operator.replay import ReplaySource

        if not settings.replay.path:
            raise ValueError("source 'replay' needs replay.path (a recorded operator session file)")
        return ReplaySource(settings.replay.path, realtime=True, loop=settings.replay.loop)
    if settings.source == "udp":
        from rynn_retarget.operator.udp import UdpOperatorSource

        return UdpOperatorSource(settings.udp.host, settings.udp.port)
    if settings.source == "openvr":
        from rynn_retarget.operator.openvr_source import OpenVrTrackerSource

        return OpenVrTrackerSource(openvr_serials or {}, settings.rate_hz)
    raise ValueError(f"unknown operator source {settings.source!r}; choose one of {', '.join(SOURCE_KINDS)}")


class OperatorFeed:
    """Calls ``on_frame(frame)`` for every frame of ``source`` until ``stop()``.

    An exception from ``on_frame`` (a frame the consumer cannot use) is counted
    in ``errors`` and handed to ``on_error``; the feed keeps running. ``parts``: what
    the consumer uses of a synthetic frame ("trackers", "hands"); the rest is not computed.
    """

    def __init__(
        self,
        source: OperatorSource,
        on_frame: Callable[[OperatorFrame], None],
        rate_hz: float = 120.0,
        epoch_s: float = 0.0,
        clock: Callable[[], float] = time.time,
        on_error: Callable[[Exception], None] = lambda error: None,
        parts: frozenset = FRAME_PARTS,
    ):
        self.source = source
        self._on_frame = on_frame
        self._on_error = on_error
        self.errors = 0
        self._period = 1.0 / rate_hz
        self._epoch = epoch_s
        self._clock = clock
        self._parts = parts
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="operator-feed", daemon=True)

    def start(self) -> "OperatorFeed":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.source.close()
        self._thread.join(timeout=2.0)

    def _run(self) -> None:
        if isinstance(self.source, SyntheticOperator):
            self._sample_clocked(self.source)
            return
        for frame in self.source.frames():
            if self._stop.is_set():
                return
            self._deliver(frame)

    def _deliver(self, frame: OperatorFrame) -> None:
        try:
            self._on_frame(frame)
        except Exception as error:  # one bad frame must not end the stream
            self.errors += 1
            self._on_error(error)

    def _sample_clocked(self, operator: SyntheticOperator) -> None:
        next_tick = time.monotonic()
        while not self._stop.is_set():
            self._deliver(operator.frame_at(self._clock() - self._epoch, self._parts))
            next_tick += self._period
            delay = next_tick - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                next_tick = time.monotonic()  # fell behind: do not burst to catch up
