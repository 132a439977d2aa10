"""The repository's root `launch/` and `config/` (the layout the design names) hold the bring-up launch
file and the configuration a user edits, as links to the files their packages own and install: every
entry resolves, is the file the package's lookup finds in this checkout, and is content-identical to
the copy installed into the package's share directory (the one `ros2 launch` and an installed node read)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ros_test_tools import REPO_ROOT
from rynn_common.config_paths import find_config

ROOT_DIRS = ("launch", "config")
# What the root must offer at least: the bring-up, the graph and each node file a user edits.
EXPECTED = {"launch/digital_teleop.launch.py", "config/teleop_graph.yaml", "config/world_model.yaml",
            "config/retarget.yaml", "config/bridge.yaml", "config/robot.yaml", "config/recorder.yaml"}


def root_entries() -> list[Path]:
    return sorted(entry for directory in ROOT_DIRS for entry in (REPO_ROOT / directory).iterdir())


def owning_package(target: Path) -> tuple[str, str]:
    """(ROS package name, share subdirectory) of a file ``src/<dir>/<sub>/<name>``."""
    package_dir, sub = target.parents[1], target.parent.name
    manifest = (package_dir / "package.xml").read_text()
    name = manifest.split("<name>", 1)[1].split("</name>", 1)[0].strip()
    return name, sub


def check_entry(entry: Path, share_of) -> list[str]:
    """Problems of one root entry; ``share_of(package)`` is that package's installed share directory."""
    relative = entry.relative_to(REPO_ROOT)
    if not entry.is_symlink():
        return [f"{relative}: not a link to the owning package's file"]
    link = os.readlink(entry)
    if os.path.isabs(link):
        return [f"{relative}: absolute link {link} (breaks in another checkout)"]
    if not entry.exists():
        return [f"{relative}: dangling link to {link}"]
    target = entry.resolve()
    src = (REPO_ROOT / "src").resolve()
    if src not in target.parents or target.parent.name != entry.parent.name:
        return [f"{relative}: links to {target}, not to a package's {entry.parent.name}/"]
    package, sub = owning_package(target)
    problems = []
    if sub == "config" and find_config(package, entry.name).resolve() != target:
        problems.append(f"{relative}: {package} finds {entry.name} at {find_config(package, entry.name)}, not {target}")
    installed = Path(share_of(package)) / sub / entry.name
    if not installed.is_file():
        problems.append(f"{relative}: {package} does not install {sub}/{entry.name} ({installed} missing; run make build)")
    elif installed.read_bytes() != target.read_bytes():
        problems.append(f"{relative}: the installed {installed} differs from {target} (stale install: run make build)")
    return problems


def test_root_has_the_bring_up_and_the_user_configuration():
    assert {str(entry.relative_to(REPO_ROOT)) for entry in root_entries()} >= EXPECTED


@pytest.mark.ros
def test_every_root_entry_is_the_installed_file():
    from ament_index_python.packages import get_package_share_directory

    problems = [problem for entry in root_entries() for problem in check_entry(entry, get_package_share_directory)]
    assert problems == []


def test_a_dangling_or_stale_entry_is_found(tmp_path, monkeypatch):
    import test_root_layout as layout

    monkeypatch.setattr(layout, "REPO_ROOT", tmp_path)
    package = tmp_path / "src" / "pkg"
    (package / "config").mkdir(parents=True)
    (package / "package.xml").write_text("<package><name>demo_pkg</name></package>")
    (package / "config" / "node.yaml").write_text("rate_hz: 10\n")
    share = tmp_path / "share"
    (share / "config").mkdir(parents=True)
    (share / "config" / "node.yaml").write_text("rate_hz: 20\n")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "node.yaml").symlink_to("../src/pkg/config/node.yaml")
    (tmp_path / "config" / "gone.yaml").symlink_to("../src/pkg/config/gone.yaml")
    (tmp_path / "config" / "copy.yaml").write_text("rate_hz: 10\n")
    monkeypatch.setattr(layout, "find_config", lambda pkg, name: package / "config" / name)
    found = {entry.name: layout.check_entry(entry, lambda pkg: share) for entry in (tmp_path / "config").iterdir()}
    assert "dangling" in found["gone.yaml"][0]
    assert "not a link" in found["copy.yaml"][0]
    assert "stale install" in found["node.yaml"][0]
    (share / "config" / "node.yaml").write_text("rate_hz: 10\n")
    assert layout.check_entry(tmp_path / "config" / "node.yaml", lambda pkg: share) == []
