"""The robot's LCM interface, controller and simulator settings (this package's config/robot.yaml).

One YAML file configures the bridge, the simulated robot, the episode
generator and the benchmarks, so the channel names cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from rynn_common.config_io import load_config
from rynn_common.config_paths import find_config
from rynn_common.ros_names import MODE_TOPIC


@dataclass(frozen=True)
class LcmSettings:
    url: str = "udpm://239.255.76.67:7667?ttl=0"
    command_channel: str = "RYNN_ROBOT_COMMAND"
    state_channel: str = "RYNN_ROBOT_STATE"
    command_rate_hz: float = 200.0


@dataclass(frozen=True)
class ControllerSettings:
    control_rate_hz: float = 500.0
    state_rate_hz: float = 500.0
    watchdog_timeout_ms: float = 100.0
    max_sequence_gap: int = 20
    joint_limit_tolerance_rad: float = 0.001
    command_delay_ms: float = 0.0


@dataclass(frozen=True)
class SimSettings:
    urdf_path: str = ""
    scene: str = "empty"
    seed: int = 0
    render_rate_hz: float = 30.0
    image_width: int = 640
    image_height: int = 480
    multisamples: int = 0  # anti-aliasing samples of the live camera (config/robot.yaml says why 0)
    digital_render_rate_hz: float = 1.0  # while digital: the console's view of the real camera only (anchors use real-mode frames)
    mode_topic: str = MODE_TOPIC  # the bridge's latched mode, which selects the render rate


@dataclass(frozen=True)
class RobotConfig:
    lcm: LcmSettings = LcmSettings()
    controller: ControllerSettings = ControllerSettings()
    sim: SimSettings = SimSettings()

    def with_lcm_url(self, url: str) -> "RobotConfig":
        return replace(self, lcm=replace(self.lcm, url=url))

    def with_sim(self, **changes) -> "RobotConfig":
        return replace(self, sim=replace(self.sim, **changes))


def load_robot_config(path: str | Path | None = None) -> RobotConfig:
    """Settings from ``path``, else this package's config/robot.yaml; keys left out keep the defaults above."""
    return load_config(RobotConfig, path or find_config("rynn_robot_bridge", "robot.yaml"))
