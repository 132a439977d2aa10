"""What the console's text panels say: health, recording and the answers to its controls.

Fed with plain values (the node shell converts the ROS messages), so every sentence the operator
reads is unit-tested without DDS.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from rynn_world.console.streams import StreamReading

WORLD_MODEL_SOURCE = "world_model_node"
LOOP_SOURCE = "retarget_node"  # its outputs are the 200 Hz actions
LOOP_TARGET_HZ = 200.0
RECORDER_SOURCE = "rynn_recorder"
DIAGNOSTIC_LEVELS = {0: "OK", 1: "WARN", 2: "ERROR", 3: "STALE"}


@dataclass(frozen=True)
class StageTiming:
    stage: str
    last_s: float
    p50_s: float
    p99_s: float


@dataclass(frozen=True)
class StatusReport:
    """One /rynn/status message."""

    source: str
    stamp_s: float
    outputs: int
    dropped: int
    rejected: int
    latencies: tuple[StageTiming, ...] = ()
    faults: tuple[str, ...] = ()


@dataclass(frozen=True)
class DiagnosticReport:
    """One DiagnosticStatus of a /diagnostics array."""

    name: str
    level: int
    message: str
    hardware_id: str = ""
    values: dict[str, str] = field(default_factory=dict)


class HealthBoard:
    """Newest status and diagnostics per node; output rates from consecutive status counters."""

    def __init__(self):
        self.status: dict[str, StatusReport] = {}
        self.diagnostics: dict[str, DiagnosticReport] = {}
        self.output_hz: dict[str, float] = {}
        self._outputs_rose_s: dict[str, float] = {}  # stamp of the newest report whose counter had grown

    def on_status(self, report: StatusReport) -> None:
        previous = self.status.get(report.source)
        if previous is not None and report.stamp_s > previous.stamp_s and report.outputs >= previous.outputs:
            self.output_hz[report.source] = (report.outputs - previous.outputs) / (report.stamp_s - previous.stamp_s)
        if previous is None or report.outputs != previous.outputs:
            self._outputs_rose_s[report.source] = report.stamp_s
        self.status[report.source] = report

    def outputs_reading(self, source: str, now_stamp_clock: float) -> StreamReading | None:
        """A node's outputs as a stream: silent since the newest status report that counted more (a node that
        stops reporting falls silent too); None before its first report."""
        rose = self._outputs_rose_s.get(source)
        if rose is None:
            return None
        silent = max(0.0, now_stamp_clock - rose)
        return StreamReading(self.output_hz.get(source, 0.0), silent, silent, self.status[source].outputs)

    def on_diagnostic(self, report: DiagnosticReport) -> None:
        self.diagnostics[report.name] = report

    def loop_rate_line(self) -> str:
        rate = self.output_hz.get(LOOP_SOURCE)
        if rate is None:
            return f"Action loop: waiting for two {LOOP_SOURCE} status messages"
        missed = self.diagnostics.get("rynn_bridge")
        missed_text = ""
        if missed is not None and "dropped.command_deadlines_missed" in missed.values:
            missed_text = f", bridge missed {missed.values['dropped.command_deadlines_missed']} command deadlines"
        return f"Action loop: {rate:.0f} Hz (target {LOOP_TARGET_HZ:.0f} Hz){missed_text}"

    def faults(self) -> list[str]:
        """Every active fault, as ``node: fault``; diagnostics in ERROR add what status does not say."""
        lines = [f"{source}: {fault}" for source, report in sorted(self.status.items()) for fault in report.faults]
        for name, report in sorted(self.diagnostics.items()):
            if report.level >= 2 and not (name in self.status and self.status[name].faults):
                lines.append(f"{name}: {DIAGNOSTIC_LEVELS.get(report.level, report.level)} {report.message}")
        return lines

    def timings_markdown(self) -> str:
        """Stage timings, world model first, as a markdown table (ms)."""
        order = sorted(self.status, key=lambda source: (source != WORLD_MODEL_SOURCE, source))
        rows = [
            f"| {source} | {t.stage} | {t.last_s * 1e3:.1f} | {t.p50_s * 1e3:.1f} | {t.p99_s * 1e3:.1f} |"
            for source in order for t in self.status[source].latencies
        ]
        if not rows:
            return "No stage timings yet."
        return "\n".join(["| node | stage | last ms | p50 ms | p99 ms |", "| --- | --- | ---: | ---: | ---: |", *rows])

    def counters_markdown(self) -> str:
        rows = [
            f"| {s.source} | {s.outputs} | {self.output_hz.get(s.source, 0.0):.1f} | {s.dropped} | {s.rejected} |"
            for s in sorted(self.status.values(), key=lambda s: s.source)
        ]
        if not rows:
            return ""
        return "\n".join(["| node | outputs | per s | dropped | rejected |", "| --- | ---: | ---: | ---: | ---: |", *rows])


class RecordingBoard:
    """The recorder's state as its /diagnostics report it, plus the episode's elapsed time."""

    def __init__(self):
        self.episode = ""
        self.output_dir = ""
        self.counts: dict[str, dict[str, str]] = {}
        self._episode_seen_at: float | None = None

    def on_recorder_diagnostic(self, report: DiagnosticReport, now: float) -> None:
        episode = report.values.get("recording", "")
        if episode and episode != self.episode:
            self._episode_seen_at = now
        elif not episode:
            self._episode_seen_at = None
        self.episode, self.output_dir = episode, report.hardware_id
        counts: dict[str, dict[str, str]] = {}
        for key, value in report.values.items():
            if key.startswith("episode/"):
                topic, _, counter = key[len("episode"):].rpartition(".")
                counts.setdefault(topic, {})[counter] = value
        self.counts = counts

    def started(self, episode_dir: str, now: float) -> None:
        """The start service answered: the clock runs from now, before the recorder's next report."""
        self.episode = episode_dir.rstrip("/").rsplit("/", 1)[-1]
        self._episode_seen_at = now

    def elapsed_s(self, now: float) -> float | None:
        return None if self._episode_seen_at is None or not self.episode else now - self._episode_seen_at

    def summary_markdown(self, now: float) -> str:
        if not self.episode:
            return "**Not recording.**"
        elapsed = self.elapsed_s(now)
        directory = f"{self.output_dir.rstrip('/')}/{self.episode}" if self.output_dir else self.episode
        lines = [f"**Recording** `{directory}` for {elapsed:.0f} s" if elapsed is not None else f"**Recording** `{directory}`"]
        if self.counts:
            lines += ["", "| topic | received | written | lost |", "| --- | ---: | ---: | ---: |"]
            lines += [f"| {topic} | {c.get('received', '?')} | {c.get('written', '?')} | {c.get('lost', '?')} |"
                      for topic, c in sorted(self.counts.items())]
        return "\n".join(lines)


def describe_mode_answer(requested: str, success: bool, message: str) -> str:
    """The bridge's SetMode answer in one line, a refusal with its reason."""
    return f"{requested}: accepted ({message})" if success else f"{requested}: REFUSED: {message}"


def describe_recorder_answer(action: str, success: bool, message: str) -> str:
    """A recorder Trigger answer in one line (the stop answer's JSON summary shortened)."""
    if not success:
        return f"{action} failed: {message}"
    if action == "stop":
        try:
            summary = json.loads(message)
            return f"stopped {summary['episode']}: {summary['messages_written']} messages written"
        except (ValueError, KeyError, TypeError):
            return f"stopped: {message}"
    return f"{action}: {message}"


class PendingCalls:
    """At most one call in flight per control, so a double click or a second browser cannot
    send a request twice; a call without an answer after ``timeout_s`` is given up."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self._since: dict[str, float] = {}
        self._lock = threading.Lock()  # clicks arrive on the web server's thread, answers on the executor's

    def begin(self, name: str, now: float) -> bool:
        with self._lock:
            if name in self._since:
                return False
            self._since[name] = now
            return True

    def finish(self, name: str) -> bool:
        """True when the call was still pending (its answer is news, not a late echo)."""
        with self._lock:
            return self._since.pop(name, None) is not None

    def expired(self, now: float) -> list[str]:
        with self._lock:
            late = [name for name, since in self._since.items() if now - since > self.timeout_s]
            for name in late:
                del self._since[name]
            return late

    def busy(self, name: str) -> bool:
        with self._lock:
            return name in self._since
