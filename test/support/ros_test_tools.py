"""Helpers for tests that run nodes as separate processes (import as ``ros_test_tools``).

pytest.ini puts test/support on sys.path, so any test directory can import this
module; the fixtures that use it live in the repository's root conftest.py.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE_PATHS = [REPO_ROOT / "src" / p for p in ("rynn_retarget", "rynn_world_node", "rynn_robot_bridge")]

os.environ.setdefault("ROS_DOMAIN_ID", str(random.Random(os.getpid() ^ time.time_ns()).randint(1, 100)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")


def node_env(**extra: str) -> dict[str, str]:
    """Environment for a child process: this session's domain, sources first on sys.path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, SOURCE_PATHS), env.get("PYTHONPATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def wait_until(predicate, timeout: float, spin=None, period: float = 0.02) -> bool:
    """Poll ``predicate`` (spinning ``spin()`` between polls) until true or timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if spin is not None:
            spin()
        if predicate():
            return True
        time.sleep(period if spin is None else 0.0)
    return predicate()


def read_log(proc) -> str:
    """Everything a process started by the ``start_process`` fixture printed so far."""
    return Path(proc.log_path).read_text()  # type: ignore[attr-defined]
