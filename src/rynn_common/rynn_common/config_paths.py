"""Where a package's YAML configuration is found at run time: the one lookup rule.

Each package keeps its files in ``config/`` beside its Python package and installs
them into ``share/<package>/config``. A package finds only its own files (the
bring-up in rynn_world is the one reader of other packages' configuration, and
passes paths). Rule: the source checkout's ``config/`` when the package is
imported from a checkout (a checkout never reads a stale installed copy), else
the installed share directory. A node's ``config_file`` parameter replaces the
file altogether.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def find_config(package: str, name: str) -> Path:
    """Path of ``package``'s config file ``name``; FileNotFoundError says where it looked."""
    searched = [directory / name for directory in config_dirs(package)]
    for candidate in searched:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{package} config file {name!r} not found at: {', '.join(map(str, searched))}")


def config_dirs(package: str) -> list[Path]:
    """The source checkout's ``config/`` (when ``package`` is imported from one), then the installed one."""
    dirs = []
    spec = importlib.util.find_spec(package)
    if spec is not None and spec.origin:
        package_root = Path(spec.origin).resolve().parents[1]
        if (package_root / "package.xml").is_file():  # a ROS package's source directory, not site-packages
            dirs.append(package_root / "config")
    dirs.append(installed_share(package) / "config")
    return dirs


def installed_share(package: str) -> Path:
    """``share/<package>`` from the ament index, or from this interpreter's prefix
    (the venv that `make setup` builds into) when no ROS environment is sourced."""
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory(package))
    except (ImportError, LookupError, OSError):
        return Path(sys.prefix) / "share" / package
