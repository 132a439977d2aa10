"""Tracker node: the operator's five body trackers as TF on /tf.

Publishes ``frames.world -> frames.<tracker>`` for chest, left/right wrist and
left/right upper arm at the source rate (100-120 Hz for Vive trackers), stamped
with this node's clock when the sample is taken.
"""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import Quaternion, Transform, TransformStamped, Vector3
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage
from transforms3d.quaternions import mat2quat

from rynn_common.node_runner import run_node
from rynn_common.qos import TF_QOS
from rynn_common.ros_names import TF_TOPIC
from rynn_retarget.nodes.operator_input import OperatorInputNode
from rynn_retarget.operator.feed import TrackerNodeSettings
from rynn_retarget.operator.frame import TRACKER_NAMES, OperatorFrame


def transform_from_matrix(matrix: np.ndarray) -> Transform:
    w, x, y, z = mat2quat(matrix[:3, :3])
    tx, ty, tz = matrix[:3, 3]
    return Transform(translation=Vector3(x=tx, y=ty, z=tz), rotation=Quaternion(x=x, y=y, z=z, w=w))


class TrackerNode(OperatorInputNode):
    frame_parts = frozenset({"trackers"})
    settings_class = TrackerNodeSettings

    def __init__(self, **node_options):
        super().__init__("tracker_node", **node_options)
        frames = self.settings.frames
        self.world_frame = frames.world
        self.tracker_frames = {name: getattr(frames, name) for name in TRACKER_NAMES}
        self.publisher = self.create_publisher(TFMessage, TF_TOPIC, TF_QOS)
        self.start_feed(self.settings.openvr.by_role())
        self.get_logger().info(
            f"publishing {len(TRACKER_NAMES)} trackers from source '{self.settings.source}' at "
            f"{self.settings.rate_hz:g} Hz "
            f"as {self.world_frame} -> {', '.join(self.tracker_frames.values())}"
        )

    def publish_frame(self, frame: OperatorFrame) -> None:
        stamp = self.get_clock().now().to_msg()
        transforms = [
            TransformStamped(
                header=Header(stamp=stamp, frame_id=self.world_frame),
                child_frame_id=self.tracker_frames[name],
                transform=transform_from_matrix(frame.trackers[name]),
            )
            for name in TRACKER_NAMES
            if name in frame.trackers
        ]
        if transforms:
            self.publisher.publish(TFMessage(transforms=transforms))


COMPONENT = TrackerNode  # what a container (rynn_world.launcher.container) instantiates


def main(args=None):
    run_node(TrackerNode, args)


if __name__ == "__main__":
    main()
