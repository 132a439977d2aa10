"""What the tracker and glove nodes share: their settings as parameters (``source``, ``rate_hz``,
``synthetic.*``, ``replay.*``, ``udp.*``; rynn_common.node_settings) and the feed that drives
``publish_frame`` from a background thread."""

from __future__ import annotations

from rclpy.node import Node

from rynn_common.node_settings import declare_settings
from rynn_retarget.operator.feed import OperatorFeed, SourceSettings, open_source
from rynn_retarget.operator.frame import OperatorFrame
from rynn_retarget.operator.synthetic import FRAME_PARTS


class OperatorInputNode(Node):
    """Declares ``settings_class``'s parameters (``self.settings``); ``start_feed()`` then opens the
    source and calls ``publish_frame`` per frame. A frame the node cannot publish is logged
    and skipped; the stream goes on. ``frame_parts``: what ``publish_frame`` uses of a frame."""

    frame_parts = FRAME_PARTS
    settings_class = SourceSettings

    def __init__(self, name: str, **node_options):
        super().__init__(name, **node_options)
        self.settings = declare_settings(self, self.settings_class, None)  # no file: the defaults, or `config_file`
        self.feed: OperatorFeed | None = None

    def start_feed(self, openvr_serials: dict[str, str] | None = None) -> None:
        s = self.settings
        self.feed = OperatorFeed(open_source(s, openvr_serials), self.publish_frame, s.rate_hz, s.synthetic.epoch_s,
                                 on_error=self.on_bad_frame, parts=self.frame_parts)
        self.feed.start()

    def publish_frame(self, frame: OperatorFrame) -> None:
        raise NotImplementedError

    def on_bad_frame(self, error: Exception) -> None:
        self.get_logger().warning(f"dropped an operator frame: {error}", throttle_duration_sec=2.0)

    def destroy_node(self):
        if self.feed is not None:
            self.feed.stop()
        super().destroy_node()
