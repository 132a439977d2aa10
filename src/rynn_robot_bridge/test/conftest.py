"""Bridge test set-up: the generated LCM bindings and a per-session LCM URL."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from launched_graph import unique_lcm_url

REPO_ROOT = Path(__file__).resolve().parents[3]
BINDINGS = REPO_ROOT / "src/rynn_robot_bridge/rynn_robot_bridge/lcm_types/rynn_lcm/__init__.py"

if not BINDINGS.is_file():  # build output, normally made by `make setup`
    subprocess.run([str(REPO_ROOT / "scripts/generate_lcm_types.sh")], check=True)


@pytest.fixture(scope="session")
def lcm_url() -> str:
    """Multicast URL on a UDP port no socket here holds, so parallel runs never cross-talk (a port
    computed from the domain id met the benchmarks' 7600 + id ports)."""
    return unique_lcm_url()


@pytest.fixture
def repo_conftest(request):
    """The repository conftest module (``wait_until``, ``read_log``): this file shadows its module name."""
    return request.config.pluginmanager.get_plugin(str(REPO_ROOT / "conftest.py"))


@pytest.fixture
def small_volume(tmp_path):
    """A 24 MiB tmpfs to fill (mounting needs root; elsewhere the test is skipped, saying why)."""
    volume = tmp_path / "volume"
    volume.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(volume)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield volume
    finally:
        subprocess.run(["umount", "-l", str(volume)], check=False)


@pytest.fixture(scope="session")
def fifo_allowed() -> bool:
    """Whether the kernel grants this user SCHED_FIFO (root, CAP_SYS_NICE or an rtprio limit), tried and undone."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except OSError:
        return False
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True
