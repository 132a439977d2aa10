"""The robot's LCM interface, controller and simulator settings from config/robot.yaml.

One YAML file configures the bridge, the simulated robot, the episode
generator and the benchmarks, so the channel names cannot drift apart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

import yaml

CONFIG_ENV = "RYNN_ROBOT_CONFIG"


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


@dataclass(frozen=True)
class RobotConfig:
    lcm: LcmSettings = LcmSettings()
    controller: ControllerSettings = ControllerSettings()
    sim: SimSettings = SimSettings()

    def with_lcm_url(self, url: str) -> "RobotConfig":
        return replace(self, lcm=replace(self.lcm, url=url))

    def with_sim(self, **changes) -> "RobotConfig":
        return replace(self, sim=replace(self.sim, **changes))


def default_config_path() -> Path | None:
    """``$RYNN_ROBOT_CONFIG``, else the repository's config/robot.yaml, else the installed copy."""
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    source_tree = Path(__file__).resolve().parents[3] / "config" / "robot.yaml"
    if source_tree.is_file():
        return source_tree
    try:
        from ament_index_python.packages import get_package_share_directory

        installed = Path(get_package_share_directory("rynn_world")) / "config" / "robot.yaml"
        return installed if installed.is_file() else None
    except (ImportError, LookupError, OSError):  # not installed, or no ament environment
        return None


def load_robot_config(path: str | Path | None = None) -> RobotConfig:
    """Settings from ``path`` (or the default file); unknown keys are an error, missing keys keep defaults."""
    path = Path(path) if path else default_config_path()
    if path is None:
        return RobotConfig()
    if not path.is_file():
        raise FileNotFoundError(f"robot config not found: {path}")
    raw = yaml.safe_load(path.read_text()) or {}
    sections = {"lcm": LcmSettings, "controller": ControllerSettings, "sim": SimSettings}
    unknown = set(raw) - set(sections)
    if unknown:
        raise ValueError(f"{path}: unknown sections {sorted(unknown)} (expected {sorted(sections)})")
    return RobotConfig(**{name: _section(cls, raw.get(name) or {}, f"{path}:{name}") for name, cls in sections.items()})


def _section(cls, values: dict, where: str):
    known = {f.name: f.type for f in fields(cls)}
    unknown = set(values) - set(known)
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)} (expected {sorted(known)})")
    defaults = cls()
    return cls(**{k: type(getattr(defaults, k))(v) for k, v in values.items()})
