"""The setup's system step names a Debian package it cannot install."""

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
