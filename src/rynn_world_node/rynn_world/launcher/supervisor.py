"""Run node processes as one graph: prefixed and saved logs, readiness, required and respawned
nodes, clean stop.

A required node that exits stops the graph; a node with ``respawn`` is started again
``respawn_delay`` seconds after it exits (its log continues in the same file); any
other node's exit is reported and the graph keeps running.

Each node runs in its own session (process group), so a terminal Ctrl-C reaches
only the supervisor, which then stops the nodes in order: SIGINT (their clean
ROS shutdown), SIGTERM after ``sigint_timeout_s``, SIGKILL after
``sigterm_timeout_s``; anything left in a node's process group is killed, so
no orphan survives the supervisor. A supervisor that is killed itself takes its nodes
along: each asks the kernel for SIGINT when the supervisor dies (``LAUNCHER_PID_ENV``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from rynn_common.process_link import LAUNCHER_PID_ENV
from rynn_world.launcher.graph import NodeSpec

POLL_S = 0.1


@dataclass
class NodeProcess:
    spec: NodeSpec
    command: list[str]
    log_path: Path
    popen: subprocess.Popen | None = None
    started_at: float = 0.0
    ready_at: float | None = None
    exit_reported: bool = False
    restarts: int = 0
    respawn_at: float | None = None  # monotonic time of the pending restart
    pump: threading.Thread | None = field(default=None, repr=False)

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None


class GraphSupervisor:
    def __init__(
        self,
        nodes: list[tuple[NodeSpec, list[str]]],
        log_dir: Path,
        env: dict[str, str] | None = None,
        console: TextIO = sys.stdout,
        sigint_timeout_s: float = 10.0,
        sigterm_timeout_s: float = 5.0,
    ):
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.nodes = [NodeProcess(spec, command, self.log_dir / f"{spec.name}.log") for spec, command in nodes]
        # LAUNCHER_PID_ENV: each node stops when this process dies, even by SIGKILL (rynn_common.process_link)
        self.env = {**(env if env is not None else os.environ), "PYTHONUNBUFFERED": "1", LAUNCHER_PID_ENV: str(os.getpid())}
        self.console = console
        self.sigint_timeout_s = sigint_timeout_s
        self.sigterm_timeout_s = sigterm_timeout_s
        self._write_lock = threading.Lock()
        self._own_log = (self.log_dir / "rynn_launch.log").open("a")
        self._all_ready_reported = False

    # --- output ---------------------------------------------------------------------
    def say(self, message: str) -> None:
        """A launcher message: console and the launcher's own log file."""
        self._emit("rynn_launch", message, self._own_log)

    def _emit(self, prefix: str, line: str, log: TextIO) -> None:
        with self._write_lock:
            log.write(line + "\n")
            log.flush()
            self.console.write(f"[{prefix}] {line}\n")
            self.console.flush()

    def _pump(self, node: NodeProcess) -> None:
        """Copy a node's output to its log file and the console, watching for its ready line."""
        ready = re.compile(node.spec.ready_log) if node.spec.ready_log else None
        with node.log_path.open("a") as log:
            for raw in node.popen.stdout:
                line = raw.decode(errors="replace").rstrip("\n")
                self._emit(node.spec.name, line, log)
                if ready is not None and node.ready_at is None and ready.search(line):
                    node.ready_at = time.monotonic()
                    self.say(f"{node.spec.name} ready ({node.ready_at - node.started_at:.1f} s)")

    # --- life cycle -----------------------------------------------------------------
    def start(self) -> None:
        self.say(f"starting {len(self.nodes)} nodes; logs in {self.log_dir}")
        for node in self.nodes:
            role = "required" if node.spec.required else "respawned on exit" if node.spec.respawn else "optional"
            self._spawn(node, role)

    def _spawn(self, node: NodeProcess, role: str) -> None:
        node.popen = subprocess.Popen(
            node.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**self.env, **node.spec.environment},
            start_new_session=True,
        )
        node.started_at, node.ready_at, node.exit_reported, node.respawn_at = time.monotonic(), None, False, None
        node.pump = threading.Thread(target=self._pump, args=(node,), name=f"log-{node.spec.name}", daemon=True)
        node.pump.start()
        self.say(f"started {node.spec.name} (pid {node.popen.pid}, {role}): {' '.join(node.command[1:3])}")

    def _respawn(self, node: NodeProcess) -> None:
        """Start an exited node again; whatever its old process group left behind goes first."""
        signal_group(node.popen.pid, signal.SIGKILL)
        node.pump.join(timeout=2.0)  # its last lines before the new ones
        node.restarts += 1
        self._spawn(node, f"restart {node.restarts}")

    def run(self, stop: threading.Event) -> int:
        """Supervise until ``stop`` is set (exit 0) or a required node exits (exit 1); then stop all."""
        started = time.monotonic()
        while not stop.wait(POLL_S):
            for node in self.nodes:
                if node.respawn_at is not None:
                    if time.monotonic() >= node.respawn_at:
                        self._respawn(node)
                    continue
                code = node.popen.poll()
                if code is None or node.exit_reported:
                    continue
                node.exit_reported = True
                if node.spec.required:
                    self.say(f"required node {node.spec.name} exited ({describe_exit(code)}); stopping the graph")
                    self.stop()
                    self.say(f"graph stopped because required node {node.spec.name} exited ({describe_exit(code)})")
                    return 1
                if node.spec.respawn:
                    node.respawn_at = time.monotonic() + node.spec.respawn_delay
                    self.say(f"node {node.spec.name} exited ({describe_exit(code)}); "
                             f"respawning in {node.spec.respawn_delay:g} s")
                    continue
                self.say(f"node {node.spec.name} exited ({describe_exit(code)}); not required, the graph keeps running")
            self._report_ready(started)
        self.say("stop requested; stopping the graph")
        self.stop()
        self.say("graph stopped")
        return 0

    def _report_ready(self, started: float) -> None:
        watched = [node for node in self.nodes if node.spec.ready_log]
        if not self._all_ready_reported and all(node.ready_at is not None for node in watched):
            self._all_ready_reported = True
            self.say(f"all {len(self.nodes)} nodes up ({time.monotonic() - started:.1f} s)")

    def stop(self) -> None:
        """SIGINT every running node (last started first), then escalate; no process is left behind."""
        running = [node for node in reversed(self.nodes) if node.running]
        previous = None  # (signal name, seconds waited)
        for signum, timeout in (
            (signal.SIGINT, self.sigint_timeout_s),
            (signal.SIGTERM, self.sigterm_timeout_s),
            (signal.SIGKILL, self.sigterm_timeout_s),
        ):
            if not running:
                break
            if previous is not None:
                names = ", ".join(node.spec.name for node in running)
                self.say(f"{names} still running {previous[1]:g} s after {previous[0]}: sending {signum.name}")
            for node in running:
                signal_group(node.popen.pid, signum)
            deadline = time.monotonic() + timeout
            while running and time.monotonic() < deadline:
                time.sleep(0.05)
                running = [node for node in running if node.running]
            previous = (signum.name, timeout)
        for node in self.nodes:
            signal_group(node.popen.pid, signal.SIGKILL)  # helpers a node left in its group
            node.popen.wait()
            if node.pump is not None:
                node.pump.join(timeout=2.0)
            if not node.exit_reported:
                node.exit_reported = True
                self.say(f"{node.spec.name} stopped ({describe_exit(node.popen.returncode)})")
        self._own_log.flush()


def signal_group(pgid: int, signum: int) -> None:
    """Signal a node's process group (its pid: each node leads its own session); gone is fine."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def describe_exit(code: int) -> str:
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def install_stop_handlers(stop: threading.Event, on_signal: Callable[[str], None]) -> None:
    """Ctrl-C and SIGTERM ask the supervisor to stop the graph (it runs in the main thread)."""

    def handler(signum, _frame):
        on_signal(signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handler)
