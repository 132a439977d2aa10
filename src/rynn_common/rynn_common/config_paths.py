"""Where the suite's YAML configuration is found at run time.

The repo-root ``config/`` is one source of truth for ``ros2 launch``, the
embedded launcher and the tests; rynn_world installs it into its share
directory. Lookup order: $RYNN_CONFIG_DIR, the source checkout this module
sits in (so a checkout never reads a stale installed copy), then the share
directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SOURCE_CONFIG_DIR = Path(__file__).resolve().parents[3] / "config"


def config_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("RYNN_CONFIG_DIR"):
        dirs.append(Path(os.environ["RYNN_CONFIG_DIR"]))
    if SOURCE_CONFIG_DIR.is_dir():
        dirs.append(SOURCE_CONFIG_DIR)
    dirs.append(installed_share("rynn_world") / "config")
    return dirs


def installed_share(package: str) -> Path:
    """``share/<package>`` from the ament index, or from this interpreter's prefix
    (the venv that `make setup` builds into) when no ROS environment is sourced."""
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory(package))
    except (ImportError, LookupError, OSError):
        return Path(sys.prefix) / "share" / package


def find_config(name: str) -> Path:
    """Path of config file ``name`` (e.g. ``retarget.yaml``); FileNotFoundError lists where it looked."""
    searched = config_dirs()
    for directory in searched:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"config file {name!r} not found in: {', '.join(map(str, searched))} (set RYNN_CONFIG_DIR or pass a path)"
    )
