"""One way to expose settings as ROS parameters, over real rclpy: parameter > file > dataclass default."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from rynn_common.config_io import ConfigError

pytestmark = pytest.mark.ros
rclpy = pytest.importorskip("rclpy")


@dataclass(frozen=True)
class Limits:
    velocity: float = 1.0
    joints: tuple[float, ...] = (0.5, 0.5)


@dataclass(frozen=True)
class Settings:
    scene: str = "empty"
    seed: int = 0
    rate_hz: float = 30.0
    follow: bool = True
    topics: list[str] = field(default_factory=lambda: ["/a", "/b"])
    matrix: list = field(default_factory=lambda: [[1.0, 0.0], [0.0, 1.0]])  # not a flat ROS type: file-only
    limits: Limits = field(default_factory=Limits)


FILE = """\
scene: block_pushing
seed: 7
rate_hz: 4
matrix: [[0.0, 1.0], [1.0, 0.0]]
limits:
  velocity: 2.0
"""


@pytest.fixture
def make_node():
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes = []

    def make(*overrides: str):
        args = ["--ros-args"] + [a for o in overrides for a in ("-p", o)]
        node = rclpy.create_node("settings_test", context=context, cli_args=args)
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.destroy_node()
    rclpy.shutdown(context=context)


def declare(node, path=None, **options):
    from rynn_common.node_settings import declare_settings

    return declare_settings(node, Settings, path, **options)


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "node.yaml"
    path.write_text(FILE)
    return path


def test_without_file_or_parameters_the_dataclass_defaults_hold(make_node):
    node = make_node()
    assert declare(node) == Settings()
    assert node.get_parameter("limits.velocity").value == 1.0
    assert node.get_parameter("topics").value == ["/a", "/b"]
    assert not node.has_parameter("matrix")


def test_the_file_beats_the_defaults(make_node, config_file):
    settings = declare(make_node(), config_file)
    assert settings == Settings(scene="block_pushing", seed=7, rate_hz=4.0, matrix=[[0.0, 1.0], [1.0, 0.0]],
                                limits=Limits(velocity=2.0))


def test_an_explicit_parameter_beats_the_file(make_node, config_file):
    node = make_node("seed:=11", "rate_hz:=3", "limits.joints:=[1.0,2.0]", "topics:=[]", "follow:=false")
    settings = declare(node, config_file)
    assert (settings.scene, settings.seed, settings.rate_hz) == ("block_pushing", 11, 3.0)
    assert settings.limits == Limits(velocity=2.0, joints=(1.0, 2.0))
    assert (settings.topics, settings.follow) == ([], False)
    assert node.get_parameter("seed").value == 11


def test_config_file_parameter_replaces_the_default_file(make_node, config_file, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text("seed: 3\n")
    settings = declare(make_node(f"config_file:={other}"), config_file)
    assert (settings.scene, settings.seed) == ("empty", 3)


def test_a_section_of_a_shared_file(make_node, tmp_path):
    shared = tmp_path / "shared.yaml"
    shared.write_text("link:\n  velocity: 4.0\nother: {anything: 1}\n")
    node = make_node("link.joints:=[0.1,0.2]")
    limits = declare_section(node, shared)
    assert limits == Limits(velocity=4.0, joints=(0.1, 0.2))


def declare_section(node, path):
    from rynn_common.node_settings import declare_settings

    return declare_settings(node, Limits, path, file_parameter="shared_config", section="link")


def test_bad_parameter_and_bad_file_name_where(make_node, config_file, tmp_path):
    with pytest.raises(ConfigError, match=r"settings_test parameters: seed: expected int"):
        declare(make_node("seed:=eleven"), config_file)
    bad = tmp_path / "bad.yaml"
    bad.write_text("limits:\n  velocityy: 1.0\n")
    with pytest.raises(ConfigError) as error:
        declare(make_node(), bad)
    assert str(bad) in str(error.value) and "limits.velocityy" in str(error.value)
