"""The teleoperation graph with its console, started through the embedded launcher, isolated.

For the README screenshot script and the console benchmark: its own DDS domain (unless one is
set), discovery kept on this host, an LCM port and a console port no one else holds, so it
can run next to other graphs on a shared machine.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CONSOLE_URL = re.compile(r"operator console on (http://\S+/)")
CONSOLE_PID = re.compile(r"\[rynn_launch\] started operator_console \(pid (\d+)")
ALL_UP = re.compile(r"\[rynn_launch\] all \d+ nodes up")
SOURCE_ROOT = Path(__file__).resolve().parents[3]  # src/ of a checkout (the installed copy has none)


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1" if kind == socket.SOCK_STREAM else "", 0))
        return probe.getsockname()[1]


@dataclass
class GraphSession:
    launcher: subprocess.Popen
    output: Path
    url: str
    console_pid: int

    def stop(self) -> None:
        if self.launcher.poll() is None:
            self.launcher.send_signal(signal.SIGINT)
            try:
                self.launcher.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.launcher.kill()
                self.launcher.wait()


def start_graph(arguments: list[str], log_dir: Path, timeout_s: float = 600.0) -> GraphSession:
    """Launch the graph with these ``name:=value`` arguments (console on a free port) and wait
    until every node is up; ``RuntimeError`` with the launcher's output tail if it is not."""
    env = dict(os.environ)
    sources = [str(SOURCE_ROOT / package) for package in ("rynn_common", "rynn_retarget", "rynn_world_node", "rynn_robot_bridge")]
    env["PYTHONPATH"] = os.pathsep.join([*sources, env.get("PYTHONPATH", "")])  # this checkout, not the last build
    env.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    log_dir.mkdir(parents=True, exist_ok=True)
    output = log_dir / "launcher.out"
    command = [sys.executable, "-m", "rynn_world.launcher", f"console_port:={free_port()}",
               f"lcm_url:=udpm://239.255.76.67:{free_port(socket.SOCK_DGRAM)}?ttl=0", *arguments,
               "--log-dir", str(log_dir)]
    launcher = subprocess.Popen(command, stdout=output.open("w"), stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + timeout_s
    while not ALL_UP.search(output.read_text()):
        if launcher.poll() is not None or time.monotonic() > deadline:
            GraphSession(launcher, output, "", 0).stop()
            raise RuntimeError(f"the graph did not come up:\n{output.read_text()[-3000:]}")
        time.sleep(0.5)
    text = output.read_text()
    url, pid = CONSOLE_URL.search(text), CONSOLE_PID.search(text)
    if url is None or pid is None:
        GraphSession(launcher, output, "", 0).stop()
        raise RuntimeError("the graph runs without its console (console:=false?)")
    return GraphSession(launcher, output, url.group(1), int(pid.group(1)))
