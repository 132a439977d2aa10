"""What the tracker and glove nodes share: the source parameters and the feed that
drives ``publish_frame`` from a background thread."""

from __future__ import annotations

from rclpy.node import Node

from rynn_retarget.operator.feed import OperatorFeed, SourceSettings, open_source
from rynn_retarget.operator.frame import OperatorFrame
from rynn_retarget.operator.synthetic import FRAME_PARTS

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


class OperatorInputNode(Node):
    """Declares the source parameters (``self.settings``); ``start_feed()`` then opens the
    source and calls ``publish_frame`` per frame. A frame the node cannot publish is logged
    and skipped; the stream goes on. ``frame_parts``: what ``publish_frame`` uses of a frame."""

    frame_parts = FRAME_PARTS

    def __init__(self, name: str, default_rate_hz: float, default_udp_port: int, **node_options):
        super().__init__(name, **node_options)
        self.settings = declare_source_parameters(self, default_rate_hz, default_udp_port)
        self.feed: OperatorFeed | None = None

    def start_feed(self) -> None:
        s = self.settings
        self.feed = OperatorFeed(open_source(s), self.publish_frame, s.rate_hz, s.epoch_s, on_error=self.on_bad_frame,
                                 parts=self.frame_parts)
        self.feed.start()

    def publish_frame(self, frame: OperatorFrame) -> None:
        raise NotImplementedError

    def on_bad_frame(self, error: Exception) -> None:
        self.get_logger().warning(f"dropped an operator frame: {error}", throttle_duration_sec=2.0)

    def destroy_node(self):
        if self.feed is not None:
            self.feed.stop()
        super().destroy_node()
