"""ROS parameters shared by the tracker and glove nodes: which source, and its settings."""

from __future__ import annotations

from rclpy.node import Node

from rynn_retarget.operator.feed import SourceSettings

DEFAULTS = SourceSettings()


def declare_source_parameters(node: Node, default_rate_hz: float, default_udp_port: int) -> SourceSettings:
    """Declare ``source``, ``rate_hz``, ``synthetic.*``, ``replay.*``, ``udp.*`` and read them back."""
    node.declare_parameter("source", DEFAULTS.kind)
    node.declare_parameter("rate_hz", default_rate_hz)
    node.declare_parameter("synthetic.motion", DEFAULTS.motion)
    node.declare_parameter("synthetic.seed", DEFAULTS.seed)
    node.declare_parameter("synthetic.period_s", DEFAULTS.period_s)
    node.declare_parameter("synthetic.epoch_s", DEFAULTS.epoch_s)
    node.declare_parameter("replay.path", DEFAULTS.replay_path)
    node.declare_parameter("replay.loop", DEFAULTS.replay_loop)
    node.declare_parameter("udp.host", DEFAULTS.udp_host)
    node.declare_parameter("udp.port", default_udp_port)
    get = lambda name: node.get_parameter(name).value  # noqa: E731
    return SourceSettings(
        kind=get("source"),
        rate_hz=float(get("rate_hz")),
        motion=get("synthetic.motion"),
        seed=int(get("synthetic.seed")),
        period_s=float(get("synthetic.period_s")),
        epoch_s=float(get("synthetic.epoch_s")),
        replay_path=get("replay.path"),
        replay_loop=bool(get("replay.loop")),
        udp_host=get("udp.host"),
        udp_port=int(get("udp.port")),
    )
