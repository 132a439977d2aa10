"""The recorder's settings from config/recorder.yaml (one file for the launch file and the embedded launcher)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

DEFAULT_TOPICS = (
    "/camera/camera/color/image_raw sensor_msgs/msg/Image",
    "/camera/camera/color/camera_info sensor_msgs/msg/CameraInfo",
    "/joint_states sensor_msgs/msg/JointState",
    "/rynn/action rynn_teleop_msgs/msg/RobotAction",
    "/tf tf2_msgs/msg/TFMessage",
    "/tf_static tf2_msgs/msg/TFMessage",
    "/robot_description std_msgs/msg/String",
    "/rynn/status rynn_teleop_msgs/msg/TeleopStatus",
    "/rynn/mode std_msgs/msg/String",
    "/rynn/operator/skeleton_camera rynn_teleop_msgs/msg/BimanualSkeleton",
    "/rynn/operator/hands rynn_teleop_msgs/msg/BimanualSkeleton",
)

DEFAULT_LATCHED_TOPICS = ("/rynn/mode", "/tf_static", "/robot_description")  # transient local, re-written per episode


@dataclass(frozen=True)
class RecorderFileSettings:
    output_dir: str = "recordings"
    flush_period_s: float = 1.0
    status_rate_hz: float = 2.0
    task: str = ""
    operator_id: str = ""
    urdf_path: str = ""
    world_model_checkpoint: str = ""
    mode_topic: str = "/rynn/mode"
    topics: list[str] = field(default_factory=lambda: list(DEFAULT_TOPICS))
    latched_topics: list[str] = field(default_factory=lambda: list(DEFAULT_LATCHED_TOPICS))


def parse_topic(entry: str) -> tuple[str, str]:
    """``"/topic pkg/msg/Type"`` -> (topic, type); a clear error for anything else."""
    parts = entry.split()
    if len(parts) != 2 or not parts[0].startswith("/") or parts[1].count("/") != 2:
        raise ValueError(f"recorder topic entry {entry!r} must be '<topic> <pkg>/msg/<Type>'")
    return parts[0], parts[1]


def default_recorder_config() -> Path | None:
    """The repository's config/recorder.yaml, else the installed copy in rynn_world's share."""
    source_tree = Path(__file__).resolve().parents[4] / "config" / "recorder.yaml"
    if source_tree.is_file():
        return source_tree
    try:
        from ament_index_python.packages import get_package_share_directory

        installed = Path(get_package_share_directory("rynn_world")) / "config" / "recorder.yaml"
        return installed if installed.is_file() else None
    except (ImportError, LookupError, OSError):  # not installed, or no ament environment
        return None


def load_recorder_settings(path: str | Path | None = None) -> RecorderFileSettings:
    path = Path(path) if path else default_recorder_config()
    if path is None:
        return RecorderFileSettings()
    raw = yaml.safe_load(Path(path).read_text()) or {}
    known = {f.name for f in fields(RecorderFileSettings)}
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)} (expected {sorted(known)})")
    settings = RecorderFileSettings(**raw)
    for entry in settings.topics:
        parse_topic(entry)
    return settings
