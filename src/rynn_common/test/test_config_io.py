"""The one YAML -> dataclass loader: defaults, nesting, frozen results, errors that name file and key."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from rynn_common.config_io import ConfigError, load_config


@dataclass(frozen=True)
class Limits:
    velocity: float = 1.0
    joints: tuple[float, ...] = (0.0, 0.0)


@dataclass(frozen=True)
class Settings:
    name: str = "robot"
    seed: int = 0
    enabled: bool = True
    topics: list[str] = field(default_factory=lambda: ["/a"])
    stride: int | None = None
    limits: Limits = field(default_factory=Limits)


def write(tmp_path, text: str):
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    return path


def test_file_values_override_defaults_and_missing_keys_keep_them(tmp_path):
    settings = load_config(Settings, write(tmp_path, "seed: 4\nlimits:\n  velocity: 2\n  joints: [1, 2.5]\n"))
    assert settings == Settings(seed=4, limits=Limits(velocity=2.0, joints=(1.0, 2.5)))
    assert isinstance(settings.limits.velocity, float) and isinstance(settings.limits.joints, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.seed = 5  # type: ignore[misc]


def test_empty_file_gives_the_defaults(tmp_path):
    assert load_config(Settings, write(tmp_path, "")) == Settings()


def test_unknown_keys_name_the_file_and_the_key(tmp_path):
    path = write(tmp_path, "seed: 1\nlimits:\n  velocty: 2.0\n")
    with pytest.raises(ConfigError) as error:
        load_config(Settings, path)
    assert str(path) in str(error.value) and "limits.velocty" in str(error.value)
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['sed'\]"):
        load_config(Settings, write(tmp_path, "sed: 1\n"))


@pytest.mark.parametrize("text, key", [
    ("seed: abc\n", "seed"),
    ("seed: 1.5\n", "seed"),
    ("enabled: 1\n", "enabled"),
    ("name: 3\n", "name"),
    ("topics: [/a, 2]\n", "topics[1]"),
    ("limits: 3\n", "limits"),
    ("limits:\n  joints: [1.0, x]\n", "limits.joints[1]"),
    ("stride: two\n", "stride"),
])
def test_wrong_types_name_the_file_and_the_key(tmp_path, text, key):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_config(Settings, path)
    assert f"{path}: {key}:" in str(error.value)


def test_optional_and_overrides(tmp_path):
    path = write(tmp_path, "stride: 3\nlimits:\n  velocity: 2.0\n")
    assert load_config(Settings, path).stride == 3
    settings = load_config(Settings, path, {"limits.velocity": 5, "stride": None, "seed": 9})
    assert (settings.limits.velocity, settings.stride, settings.seed) == (5.0, None, 9)
    with pytest.raises(ConfigError, match="seed"):
        load_config(Settings, path, {"seed.x": 1})


def test_top_level_must_be_a_mapping(tmp_path):
    with pytest.raises(ConfigError, match="mapping"):
        load_config(Settings, write(tmp_path, "- 1\n- 2\n"))
