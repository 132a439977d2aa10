"""Tracker node: the operator's five body trackers as TF on /tf.

Publishes ``frames.world -> frames.<tracker>`` for chest, left/right wrist and
left/right upper arm at the source rate (100-120 Hz for Vive trackers), stamped
with this node's clock when the sample is taken. Composed with the retarget node, that node gets
every sample in-process and DDS at most ``dds_rate_hz`` of them (rynn_common.local_delivery).
"""

from __future__ import annotations

from tf2_msgs.msg import TFMessage

from rynn_common.local_delivery import LocalPublisher
from rynn_common.node_runner import run_node
from rynn_common.qos import TF_QOS
from rynn_common.ros_conversions import TfMessagePacker, seconds_from_ns, transform_fields
from rynn_common.ros_names import TF_TOPIC
from rynn_retarget.nodes.operator_input import OperatorInputNode
from rynn_retarget.operator.feed import TrackerNodeSettings
from rynn_retarget.operator.frame import TRACKER_NAMES, OperatorFrame, TrackerTransform


class TrackerNode(OperatorInputNode):
    frame_parts = frozenset({"trackers"})
    settings_class = TrackerNodeSettings

    def __init__(self, **node_options):
        super().__init__("tracker_node", **node_options)
        frames = self.settings.frames
        self.world_frame = frames.world
        self.tracker_frames = {name: getattr(frames, name) for name in TRACKER_NAMES}
        # composed: retarget's /tf in-process, every sample; DDS (recorder, viewers) at most dds_rate_hz
        self.publisher = LocalPublisher(self, TFMessage, TF_TOPIC, TF_QOS, self.settings.dds_rate_hz)
        self.tf_bytes = TfMessagePacker()  # only the feed's thread packs
        self.start_feed(self.settings.openvr.by_role())
        self.get_logger().info(
            f"publishing {len(TRACKER_NAMES)} trackers from source '{self.settings.source}' at "
            f"{self.settings.rate_hz:g} Hz "
            f"as {self.world_frame} -> {', '.join(self.tracker_frames.values())}"
        )

    def publish_frame(self, frame: OperatorFrame) -> None:
        names = [name for name in TRACKER_NAMES if name in frame.trackers]
        if not names:
            return
        frames = [(self.world_frame, self.tracker_frames[name]) for name in names]
        matrices = [frame.trackers[name] for name in names]
        stamp_ns = self.get_clock().now().nanoseconds

        def message() -> bytes:  # only for DDS (the retarget node in-process takes the sample): no message built
            return self.tf_bytes.pack(frames, matrices, stamp_ns)

        seconds = seconds_from_ns(stamp_ns)

        def sample() -> list[TrackerTransform]:  # called by the retarget node only for a sample it takes
            return [TrackerTransform(parent, child, seconds, tuple(translation), tuple(rotation))
                    for (parent, child), translation, rotation in zip(frames, *transform_fields(matrices))]

        self.publisher.publish_sample(sample, message)


COMPONENT = TrackerNode  # what a container (rynn_world.launcher.container) instantiates


def main(args=None):
    run_node(TrackerNode, args)


if __name__ == "__main__":
    main()
