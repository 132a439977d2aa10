"""Glove node: both operator hands as one BimanualSkeleton at glove rate.

Each hand is wrist-relative (21 MediaPipe points in metres) in the frame of its
wrist tracker (``frames.left_wrist`` / ``frames.right_wrist``, the same names
the tracker node publishes on /tf), so consumers can place it with TF.
"""

from __future__ import annotations

from rynn_teleop_msgs.msg import BimanualSkeleton

from rynn_common.cdr_layout import BimanualSkeletonLayout
from rynn_common.local_delivery import LocalPublisher
from rynn_common.node_runner import run_node
from rynn_common.qos import RECORDED_STREAM_QOS
from rynn_common.ros_conversions import bimanual_skeleton_bytes, seconds_from_ns
from rynn_common.skeleton_arrays import bimanual_arrays, hand_arrays, hand_skeleton_fields
from rynn_retarget.nodes.operator_input import OperatorInputNode
from rynn_retarget.operator.feed import GloveNodeSettings
from rynn_retarget.operator.frame import HandsSample, OperatorFrame


class GloveNode(OperatorInputNode):
    frame_parts = frozenset({"hands"})
    settings_class = GloveNodeSettings

    def __init__(self, **node_options):
        super().__init__("glove_node", **node_options)
        self.frames = {"left": self.settings.frames.left_wrist, "right": self.settings.frames.right_wrist}
        topic = self.settings.topic
        # composed with the retarget node: its hands input in-process, every sample; DDS at most dds_rate_hz
        self.publisher = LocalPublisher(self, BimanualSkeleton, topic, RECORDED_STREAM_QOS, self.settings.dds_rate_hz)
        self.layout = BimanualSkeletonLayout(self.frames["left"], self.frames["left"], self.frames["right"])
        self.start_feed()
        self.get_logger().info(
            f"publishing hands from source '{self.settings.source}' at {self.settings.rate_hz:g} Hz on {topic}"
        )

    def publish_frame(self, frame: OperatorFrame) -> None:
        left, right = frame.left_hand, frame.right_hand
        stamp_ns = self.get_clock().now().nanoseconds

        def message() -> bytes:  # only for DDS (the retarget node in-process takes the sample): no message built
            return bimanual_skeleton_bytes(
                self.layout,
                left.points,
                right.points,
                stamp_ns,
                left_confidence=left.confidence,
                right_confidence=right.confidence,
                left_valid=left.valid,
                right_valid=right.valid,
            )

        def sample() -> HandsSample:  # the fields that message would carry, as its readers' arrays (one rule each:
            # rynn_common); called by the retarget node only for a sample it takes
            hands = [hand_arrays(*hand_skeleton_fields(hand.points, hand.confidence, hand.valid)) for hand in (left, right)]
            return HandsSample(seconds_from_ns(stamp_ns), bimanual_arrays(hands))

        self.publisher.publish_sample(sample, message)


COMPONENT = GloveNode  # what a container (rynn_world.launcher.container) instantiates


def main(args=None):
    run_node(GloveNode, args)


if __name__ == "__main__":
    main()
