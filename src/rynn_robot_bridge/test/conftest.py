"""Bridge test set-up: the generated LCM bindings and a per-session LCM URL."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
BINDINGS = REPO_ROOT / "src/rynn_robot_bridge/rynn_robot_bridge/lcm_types/rynn_lcm/__init__.py"

if not BINDINGS.is_file():  # build output, normally made by `make setup`
    subprocess.run([str(REPO_ROOT / "scripts/generate_lcm_types.sh")], check=True)


@pytest.fixture(scope="session")
def lcm_url() -> str:
    """Multicast URL on a port unique to this session's ROS_DOMAIN_ID, so parallel runs never cross-talk."""
    port = 7700 + int(os.environ.get("ROS_DOMAIN_ID", "0")) * 3 + os.getpid() % 3
    return f"udpm://239.255.76.67:{port}?ttl=0"


@pytest.fixture
def repo_conftest(request):
    """The repository conftest module (``wait_until``, ``read_log``): this file shadows its module name."""
    return request.config.pluginmanager.get_plugin(str(REPO_ROOT / "conftest.py"))
