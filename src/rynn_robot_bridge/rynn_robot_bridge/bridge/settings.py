"""The bridge's own settings (this package's config/bridge.yaml); the LCM link comes from robot.yaml.

The node declares every field here as a ROS parameter (rynn_common.node_settings):
an explicit parameter wins over the file, the file over the defaults below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rynn_common.config_io import load_config
from rynn_common.config_paths import find_config
from rynn_common.ros_names import (
    CAMERA_FRAME,
    CAMERA_INFO_TOPIC,
    DIGITAL_CAMERA_INFO_TOPIC,
    DIGITAL_IMAGE_TOPIC,
    IMAGE_TOPIC,
    REAL_CAMERA_INFO_TOPIC,
    REAL_IMAGE_TOPIC,
)
from rynn_robot_bridge.bridge.transition import TransitionLimits


@dataclass(frozen=True)
class BridgeSettings:
    start_mode: str = "real"
    urdf_path: str = ""  # empty: rynn_common's packaged URDF (joint limits)
    action_timeout_ms: float = 100.0  # no fresh /rynn/action for this long: the real robot holds
    state_timeout_ms: float = 100.0  # no LCM state for this long: fault, hold
    state_position_margin_rad: float = 0.1  # measured position beyond the URDF limits by more: state rejected
    state_velocity_factor: float = 2.0  # reported or implied joint speed above this x the URDF limit: state rejected
    lcm_receive_buffer_bytes: int = 4194304  # recv_buf_size added to a udpm URL without one (capped by rmem_max)
    command_loop_stall_ms: float = 250.0  # no command cycle for this long: status fault
    command_realtime_priority: int = 50  # SCHED_FIFO priority of the 200 Hz command thread; 0 = normal scheduling
    threads_realtime_priority: int = 48  # real mode: SCHED_FIFO priority of the LCM state and executor threads; 0 = normal
    digital_state_batch_ms: float = 10.0  # digital mode: robot states taken in batches this far apart; 0 = each at once
    camera_stall_timeout_ms: float = 500.0  # active camera source silent this long: fault
    camera_max_future_ms: float = 500.0  # a frame stamped further ahead of this node's clock is rejected
    velocity_scale: float = 1.0  # fraction of the URDF velocity limits allowed per command step
    joint_state_rate_hz: float = 100.0
    status_rate_hz: float = 10.0
    image_topic: str = IMAGE_TOPIC
    camera_info_topic: str = CAMERA_INFO_TOPIC
    real_image_topic: str = REAL_IMAGE_TOPIC
    real_camera_info_topic: str = REAL_CAMERA_INFO_TOPIC
    digital_image_topic: str = DIGITAL_IMAGE_TOPIC
    digital_camera_info_topic: str = DIGITAL_CAMERA_INFO_TOPIC
    camera_encoding: str = "rgb8"
    camera_width: int = 640
    camera_height: int = 480
    camera_frame_id: str = CAMERA_FRAME
    transition: TransitionLimits = field(default_factory=TransitionLimits)


def load_bridge_settings(path: str | Path | None = None) -> BridgeSettings:
    """Settings from ``path``, else this package's config/bridge.yaml; keys left out keep the defaults above."""
    return load_config(BridgeSettings, path or find_config("rynn_robot_bridge", "bridge.yaml"))
