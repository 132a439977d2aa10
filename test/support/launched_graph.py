"""Helpers for tests that run the teleoperation graph through the embedded launcher."""

from __future__ import annotations

import re
import socket
from pathlib import Path

STARTED = re.compile(r"\[rynn_launch\] started (\S+) \(pid (\d+)")
ALL_UP = re.compile(r"\[rynn_launch\] all \d+ nodes up")


def unique_lcm_url() -> str:
    """A multicast LCM URL on a UDP port no other socket here holds, so test sessions never cross-talk."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("", 0))
        port = probe.getsockname()[1]
    return f"udpm://239.255.76.67:{port}?ttl=0"


def launcher_args(log_dir, *arguments: str, sets: tuple[str, ...] = ()) -> list[str]:
    """``python`` arguments that start ``rynn_launch`` with these launch arguments and parameter overrides."""
    args = ["-m", "rynn_world.launcher", *arguments, "--log-dir", str(log_dir)]
    for item in sets:
        args += ["--set", item]
    return args


def node_pids(launcher_output: str) -> dict[str, int]:
    """Node name -> pid, from the launcher's "started ..." lines."""
    return {name: int(pid) for name, pid in STARTED.findall(launcher_output)}


def process_group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process is left in a node's process group (each node leads its own)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited while we looked
        state, group = fields[0], int(fields[2])
        if group == pgid and state != "Z":
            return True
    return False
