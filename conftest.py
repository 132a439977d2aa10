"""Shared pytest set-up: an isolated DDS domain and helpers for multi-process ROS tests.

Every test session gets its own ROS_DOMAIN_ID (inherited by the node processes
the tests start) and keeps discovery on localhost, so parallel sessions on one
machine never see each other's topics.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import rynn_robot_bridge.sim  # noqa: F401  MuJoCo fixes its GL backend at import: choose it before any test imports mujoco
from ros_test_tools import REPO_ROOT, node_env, read_log, wait_until  # noqa: F401  (re-exported)

STOP_TIMEOUT_S = 30.0  # a started process's clean stop at teardown, then SIGKILL


@pytest.fixture
def start_process(tmp_path):
    """Start Python scripts/modules as separate processes; stop them at teardown.

    Returns ``start(args, name)`` giving a Popen whose combined output goes to
    ``tmp_path/<name>.log`` (shown on failure via ``read_log``).
    """
    procs: list[tuple[subprocess.Popen, Path]] = []

    def start(args: list[str], name: str, **env_extra: str) -> subprocess.Popen:
        log = tmp_path / f"{name}.log"
        proc = subprocess.Popen(
            [sys.executable, *args],
            cwd=REPO_ROOT,
            env=node_env(**env_extra),
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        proc.log_path = log  # type: ignore[attr-defined]
        procs.append((proc, log))
        return proc

    yield start
    import psutil

    descendants = []  # a launcher's nodes: none may outlive the test into the next one's ROS domain
    for proc, _ in procs:
        if proc.poll() is None:
            try:
                descendants += psutil.Process(proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                pass
            proc.send_signal(2)  # SIGINT: nodes shut down cleanly
    for proc, _ in procs:
        try:  # longer than the launcher's own escalation (SIGINT 10 s, SIGTERM 5 s, then SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for child in descendants:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass


@pytest.fixture
def ros_node(request):
    """An rclpy node in this test process, with a single-threaded executor to spin."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.executors import SingleThreadedExecutor

    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f"test_{request.node.name[:40].replace('[', '_').replace(']', '_').replace('-', '_')}", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    node.spin_once = lambda timeout=0.05: executor.spin_once(timeout_sec=timeout)  # type: ignore[attr-defined]
    yield node
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=context)
