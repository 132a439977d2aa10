"""The robot description shipped with rynn_common, and how to choose another.

The project URDF stands in for the TIANJI M6 with two WUJI hands; a user with
the vendor's own description points ``urdf_path`` in the config at it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from rynn_common.description.camera import D435I_COLOR, CameraIntrinsics

DEFAULT_URDF_NAME = "rynn_bimanual.urdf"


def default_urdf_path() -> Path:
    """Path of the packaged ``rynn_bimanual.urdf``."""
    return Path(str(resources.files("rynn_common.description").joinpath(DEFAULT_URDF_NAME)))


def resolve_urdf_path(configured: str | None = None) -> Path:
    """The configured URDF if one is set (``~`` expanded), else the packaged one.

    Raises ``FileNotFoundError`` naming the path so a typo in the config is obvious.
    """
    if not configured:
        return default_urdf_path()
    path = Path(configured).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"robot description not found: {path} (set urdf_path in the config)")
    return path


__all__ = ["CameraIntrinsics", "D435I_COLOR", "default_urdf_path", "resolve_urdf_path"]
