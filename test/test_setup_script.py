"""The setup: its system step names a Debian package it cannot install; the venv it builds runs the
suite's modules without sourcing a ROS setup file."""

import os
import subprocess

from ros_test_tools import REPO_ROOT


def run_system_step(*packages: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "install_system_deps.sh"), *packages],
        capture_output=True, text=True, timeout=300, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "RYNN_APT_UPDATE": "0"},
    )


def test_present_packages_need_nothing():
    result = run_system_step("bash", "coreutils")
    assert result.returncode == 0 and "all present" in result.stdout


def test_uninstallable_package_is_named_in_the_error():
    result = run_system_step("bash", "rynn-no-such-package-xyz")
    assert result.returncode != 0
    assert "rynn-no-such-package-xyz" in result.stderr and "apt-get install" in result.stderr
    assert "bash" not in result.stderr.split("packages:")[-1].split("(")[0]


def test_venv_python_finds_the_installed_packages_without_sourcing_anything():
    """`.venv/bin/python -m rynn_world.episodes.generate` (docs/world_model.md) needs the ament index
    without a setup.bash: the venv's .pth points AMENT_PREFIX_PATH at the venv itself."""
    env = {k: v for k, v in os.environ.items() if k not in ("AMENT_PREFIX_PATH", "PYTHONPATH")}
    code = ("import sys; from rynn_common.bag_types import teleop_msg_dir; "
            "print(teleop_msg_dir().relative_to(sys.prefix))")
    result = subprocess.run([str(REPO_ROOT / ".venv" / "bin" / "python"), "-c", code], capture_output=True, text=True,
                            timeout=120, env=env, cwd="/")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "share/rynn_teleop_msgs/msg"
