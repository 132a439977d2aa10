"""What each recorded episode says about itself, and the hashes that identify its setup.

The hashes make a dataset auditable: two episodes recorded with different URDFs
or world-model checkpoints are never silently mixed.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from rynn_common.description import resolve_urdf_path

NO_CHECKPOINT = "none"
SIDECAR_NAME = "episode_info.json"  # next to metadata.yaml; rewritten at every flush, so it survives a crash
PACKAGES_WITH_DATA = ("rynn_common", "rynn_retarget", "rynn_world", "rynn_robot_bridge")  # whose shipped files are named portably


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def portable_name(path: str | Path) -> str:
    """How a data record names a file: package-relative for a file shipped in one of the project's
    packages (``rynn_common/description/rynn_bimanual.urdf``), else its basename; never the
    recording machine's absolute path (the sha256 next to it says which file it was)."""
    resolved = Path(path).expanduser().resolve()
    for package in PACKAGES_WITH_DATA:
        spec = importlib.util.find_spec(package)
        for root in (spec.submodule_search_locations or []) if spec else []:
            root = Path(root).resolve()
            if resolved.is_relative_to(root):
                return f"{package}/{resolved.relative_to(root).as_posix()}"
    return resolved.name


def checkpoint_sha256(path: str | Path | None) -> str:
    """sha256 of a checkpoint file, or of a directory's relative paths and contents; "none" when unset."""
    if not path:
        return NO_CHECKPOINT
    path = Path(path).expanduser()
    if path.is_file():
        return file_sha256(path)
    if not path.is_dir():
        raise FileNotFoundError(f"world-model checkpoint not found: {path}")
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        digest.update(file_sha256(file).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class EpisodeSetup:
    """The part of an episode's metadata fixed before its first message."""

    task: str
    operator_id: str
    mode: str  # "real" | "digital" | "unknown" (no /rynn/mode received yet)
    robot_description: str  # portable_name(): package-relative or basename, identified by the sha256
    robot_description_sha256: str
    world_model_checkpoint: str
    world_model_checkpoint_sha256: str
    start_time_ns: int

    @classmethod
    def create(cls, task: str, operator_id: str, mode: str, urdf_path: str, checkpoint: str, start_time_ns: int):
        """``checkpoint``: the world model's weights as the bring-up resolved them ("" = none known)."""
        urdf = resolve_urdf_path(urdf_path or None)
        return cls(
            task=task, operator_id=operator_id, mode=mode, robot_description=portable_name(urdf),
            robot_description_sha256=file_sha256(urdf),
            world_model_checkpoint=portable_name(checkpoint) if checkpoint else NO_CHECKPOINT,
            world_model_checkpoint_sha256=checkpoint_sha256(checkpoint), start_time_ns=int(start_time_ns),
        )

    def as_dict(self) -> dict:
        values = asdict(self)
        values["start_time_utc"] = datetime.fromtimestamp(self.start_time_ns / 1e9, timezone.utc).isoformat()
        return values
