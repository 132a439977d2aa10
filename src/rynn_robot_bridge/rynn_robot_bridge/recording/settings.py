"""The recorder's settings (this package's config/recorder.yaml); the node declares every key as a parameter."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rynn_common.config_io import load_config
from rynn_common.config_paths import find_config
from rynn_common.ros_names import (
    ACTION_TOPIC,
    CAMERA_INFO_TOPIC,
    CAMERA_SKELETON_TOPIC,
    HANDS_TOPIC,
    IMAGE_TOPIC,
    JOINT_STATES_TOPIC,
    MODE_TOPIC,
    ROBOT_DESCRIPTION_TOPIC,
    STATUS_TOPIC,
    TF_STATIC_TOPIC,
    TF_TOPIC,
)

DEFAULT_TOPICS = (
    f"{IMAGE_TOPIC} sensor_msgs/msg/Image",
    f"{CAMERA_INFO_TOPIC} sensor_msgs/msg/CameraInfo",
    f"{JOINT_STATES_TOPIC} sensor_msgs/msg/JointState",
    f"{ACTION_TOPIC} rynn_teleop_msgs/msg/RobotAction",
    f"{TF_TOPIC} tf2_msgs/msg/TFMessage",
    f"{TF_STATIC_TOPIC} tf2_msgs/msg/TFMessage",
    f"{ROBOT_DESCRIPTION_TOPIC} std_msgs/msg/String",
    f"{STATUS_TOPIC} rynn_teleop_msgs/msg/TeleopStatus",
    f"{MODE_TOPIC} std_msgs/msg/String",
    f"{CAMERA_SKELETON_TOPIC} rynn_teleop_msgs/msg/BimanualSkeleton",
    f"{HANDS_TOPIC} rynn_teleop_msgs/msg/BimanualSkeleton",
)

DEFAULT_LATCHED_TOPICS = (MODE_TOPIC, TF_STATIC_TOPIC, ROBOT_DESCRIPTION_TOPIC)  # transient local, re-written per episode


@dataclass(frozen=True)
class RecorderSettings:
    output_dir: str = "recordings"  # ~ expanded, relative to the working directory
    flush_period_s: float = 1.0
    status_rate_hz: float = 2.0
    task: str = ""
    operator_id: str = ""
    urdf_path: str = ""
    world_model_checkpoint: str = ""
    mode_topic: str = MODE_TOPIC
    topics: list[str] = field(default_factory=lambda: list(DEFAULT_TOPICS))
    latched_topics: list[str] = field(default_factory=lambda: list(DEFAULT_LATCHED_TOPICS))
    # Space each episode claims on its volume before it records: what closing its bag needs once the volume is
    # full (the summary grows ~100 bytes per chunk, a chunk at most ~1 s or 1 MiB and one message).
    disk_reserve_mb: float = 16.0
    # The write queue between the subscriptions and the writer thread: a stalled disk fills it, and messages
    # that find it full are dropped and counted instead of stalling the subscriptions (~9 s of 640x480 at 16 FPS).
    queue_max_mb: float = 128.0
    queue_max_messages: int = 20000
    # The writer thread takes what the subscriptions queued at least this often (commands at once): woken for
    # each of ~500 messages a second, the wake-ups cost more than the writes; 0 = woken for every message.
    write_interval_s: float = 0.05
    # The node takes what its subscriptions received this often (rynn_common.polled_input), stamping each message
    # with the time DDS received it: an executor callback per message cost ~100 us more; the queues hold 30
    # images and 500 other messages a topic. 0 is refused (a node loop needs a period).
    take_period_s: float = 0.05
    # A take hands on only messages received this long before it began; newer ones wait for the next take, so
    # a sample that Fast DDS stamped but had not yet made takeable is still written in reception order
    # (recording.reception_order). Costs this much latency on the way to the disk, nothing else.
    reception_hold_back_s: float = 0.1
    stop_timeout_s: float = 20.0  # at shutdown, how long the recording episode's queued messages may take
    # A start/stop/discard service answers within this (the node's one executor thread serves the subscriptions
    # too): on a disk that does not take writes it answers "busy"; a stop or discard still happens after.
    service_wait_s: float = 2.0


def parse_topic(entry: str) -> tuple[str, str]:
    """``"/topic pkg/msg/Type"`` -> (topic, type); a clear error for anything else."""
    parts = entry.split()
    if len(parts) != 2 or not parts[0].startswith("/") or parts[1].count("/") != 2:
        raise ValueError(f"recorder topic entry {entry!r} must be '<topic> <pkg>/msg/<Type>'")
    return parts[0], parts[1]


def load_recorder_settings(path: str | Path | None = None) -> RecorderSettings:
    """Settings from ``path``, else this package's config/recorder.yaml; topic entries checked."""
    settings = load_config(RecorderSettings, path or find_config("rynn_robot_bridge", "recorder.yaml"))
    for entry in settings.topics:
        parse_topic(entry)
    return settings
