"""Helpers for tests that run nodes as separate processes (import as ``ros_test_tools``).

pytest.ini puts test/support on sys.path, so any test directory can import this
module; the fixtures that use it live in the repository's root conftest.py.
"""

from __future__ import annotations

import fcntl
import os
import random
import re
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE_PATHS = [REPO_ROOT / "src" / p for p in ("rynn_common", "rynn_retarget", "rynn_world_node", "rynn_robot_bridge")]
DOMAIN_LOCKS = Path(tempfile.gettempdir()) / "rynn_test_ros_domains"
TEST_DOMAIN_IDS = range(1, 101)  # benchmarks take 101-200; above ~101 DDS ports meet the ephemeral range
_held_domain_lock = []  # the open, locked file: released when this process exits


def claim_domain_id() -> int:
    """A ROS_DOMAIN_ID no other test session on this machine holds. A random pick collided now
    and then when several sessions ran at once (nodes of one test saw another's topics); an
    exclusive lock per id, held for this process's life, makes the choice unique."""
    DOMAIN_LOCKS.mkdir(exist_ok=True)
    candidates = list(TEST_DOMAIN_IDS)
    random.Random(os.getpid() ^ time.time_ns()).shuffle(candidates)
    for domain_id in candidates:
        handle = (DOMAIN_LOCKS / f"{domain_id}.lock").open("w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        _held_domain_lock.append(handle)
        return domain_id
    raise RuntimeError(f"every test ROS domain id {TEST_DOMAIN_IDS} is held by another session (see {DOMAIN_LOCKS})")


if "ROS_DOMAIN_ID" not in os.environ:
    os.environ["ROS_DOMAIN_ID"] = str(claim_domain_id())
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")


def node_env(**extra: str) -> dict[str, str]:
    """Environment for a child process: this session's domain, sources first on sys.path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, SOURCE_PATHS), env.get("PYTHONPATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def thread_nice(pid: int) -> list[int]:
    """The nice value of each thread of process ``pid`` (field 19 of /proc/<pid>/task/<tid>/stat)."""
    return [int((thread / "stat").read_text().rsplit(")", 1)[1].split()[16]) for thread in Path(f"/proc/{pid}/task").iterdir()]


def autogroup_nice(pid: int) -> int | None:
    """The nice value of the autogroup of process ``pid``; None where the kernel has no autogroups."""
    autogroup = Path(f"/proc/{pid}/autogroup")
    return int(autogroup.read_text().split()[-1]) if autogroup.exists() else None


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


# A node's start-up (imports of torch, mujoco, rclpy) on two cores that other jobs load: readiness
# waits use this, so the deadlines that test behaviour start once the node is up. A deadline, not a
# sleep (it returns as soon as the node is up): importing the world-model node took 5 min 45 s of wall
# time for 10 s of CPU at load average 45 (make test-under-load beside a soak), and 180 s failed 3 tests
# then; the per-test timeout (pytest.ini, 600 s) still catches a node that never comes up.
STARTUP_TIMEOUT_S = 420.0


def wait_for_log(proc, pattern: str, timeout: float = STARTUP_TIMEOUT_S) -> bool:
    """Until a process started by ``start_process`` logs a line matching ``pattern`` (its "up" line);
    False at once if it exits first, or after ``timeout``."""
    regex = re.compile(pattern)
    wait_until(lambda: regex.search(read_log(proc)) or proc.poll() is not None, timeout, period=0.1)
    return regex.search(read_log(proc)) is not None


def read_log(proc) -> str:
    """Everything a process started by the ``start_process`` fixture printed so far."""
    return Path(proc.log_path).read_text()  # type: ignore[attr-defined]


def watch_reject_counters(ros_node, node_name: str, qos) -> dict[str, int]:
    """Subscribe ``ros_node`` to /diagnostics; the returned dict keeps ``node_name``'s newest
    ``rejected.*`` and ``dropped.*`` counters (how the nodes report bad input)."""
    from diagnostic_msgs.msg import DiagnosticArray

    counters: dict[str, int] = {}

    def on_diagnostics(msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.startswith(node_name):
                counters.update({kv.key: int(kv.value) for kv in status.values if kv.key.split(".")[0] in ("rejected", "dropped")})

    ros_node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, qos)
    return counters


def chest_tracker_tf(stamp, x: float):
    """A /tf message with one operator tracker sample, the chest under the operator's world frame
    (the frame ids the tracker node publishes), at ``x`` metres: NaN makes a bad sample the
    retarget node must count, an old ``stamp`` an out-of-order one."""
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage

    from rynn_retarget.operator.frame import OperatorFrames

    frames = OperatorFrames()
    transform = TransformStamped(child_frame_id=frames.chest)
    transform.header.frame_id, transform.header.stamp = frames.world, stamp
    transform.transform.translation.x = x
    transform.transform.rotation.w = 1.0
    return TFMessage(transforms=[transform])
