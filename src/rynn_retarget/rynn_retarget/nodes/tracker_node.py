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
from rynn_retarget.operator.frame import TRACKER_NAMES, OperatorFrame


def transform_from_matrix(matrix: np.ndarray) -> Transform:
    w, x, y, z = mat2quat(matrix[:3, :3])
    tx, ty, tz = matrix[:3, 3]
    return Transform(translation=Vector3(x=tx, y=ty, z=tz), rotation=Quaternion(x=x, y=y, z=z, w=w))


class TrackerNode(OperatorInputNode):
    frame_parts = frozenset({"trackers"})

    def __init__(self, **node_options):
        super().__init__("tracker_node", default_rate_hz=120.0, default_udp_port=9870, **node_options)
        self.declare_parameter("frames.world", "operator_world")
        for name in TRACKER_NAMES:
            self.declare_parameter(f"frames.{name}", f"operator_{name}")
        self.declare_parameter("openvr.serials", ["chest:", "left_wrist:", "right_wrist:", "left_upper_arm:", "right_upper_arm:"])
        self.world_frame = self.get_parameter("frames.world").value
        self.tracker_frames = {name: self.get_parameter(f"frames.{name}").value for name in TRACKER_NAMES}
        self.settings.openvr_serials = dict(
            entry.split(":", 1) for entry in self.get_parameter("openvr.serials").value if entry.split(":", 1)[1]
        )
        self.publisher = self.create_publisher(TFMessage, TF_TOPIC, TF_QOS)
        self.start_feed()
        self.get_logger().info(
            f"publishing {len(TRACKER_NAMES)} trackers from source '{self.settings.kind}' at "
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
