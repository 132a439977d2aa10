"""Robot state publisher: the robot description and the robot's TF tree, as robot_state_publisher does.

- ``/robot_description`` (std_msgs/String, reliable, transient local): the URDF text.
- ``/tf_static`` (transient local): every fixed joint, base_link ... camera_color_optical_frame included.
- ``/tf``: the moving joints named in the newest ``/joint_states``, stamped with its header stamp, at
  ``publish_frequency`` Hz (robot_state_publisher's parameter and default, 20 Hz) while joint states come,
  packed as bytes (rynn_common.cdr_layout).

The transforms come from ``rynn_robot_bridge.robot_state`` (Pinocchio FK on the suite's URDF). Rejected
joint states (NaN/inf, length mismatch) and unknown joint names are counted on ``/diagnostics``.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from rynn_common.cdr import deserialize
from rynn_common.clock_steps import create_steady_timer
from rynn_common.description import resolve_urdf_path
from rynn_common.node_runner import run_node
from rynn_common.node_settings import declare_settings
from rynn_common.pipeline_stats import PipelineStats
from rynn_common.polled_input import PolledSubscription
from rynn_common.qos import LATCHED_QOS, LIVE_QOS, TF_QOS
from rynn_common.ros_conversions import TfMessagePacker, make_diagnostics, make_tf_message
from rynn_common.ros_names import DIAGNOSTICS_TOPIC, JOINT_STATES_TOPIC, ROBOT_DESCRIPTION_TOPIC, TF_STATIC_TOPIC, TF_TOPIC
from rynn_robot_bridge.robot_state import LinkTransform, RobotStatePublisherCore, RobotStatePublisherSettings

NODE_NAME = "robot_state_publisher"


def stamped_transforms(transforms: list[LinkTransform], stamp, prefix: str = "") -> TFMessage:
    """``transforms`` as a TFMessage (/tf_static: once)."""
    frames = [(prefix + t.parent, prefix + t.child) for t in transforms]
    return make_tf_message(frames, [t.matrix for t in transforms], stamp)


def transforms_bytes(packer: TfMessagePacker, transforms: list[LinkTransform], stamp_ns: int, prefix: str = "") -> bytes:
    """``stamped_transforms``' message as its CDR bytes (/tf at 20 Hz: 54 TransformStamped neither built nor
    serialised)."""
    frames = [(prefix + t.parent, prefix + t.child) for t in transforms]
    return packer.pack(frames, [t.matrix for t in transforms], stamp_ns)


class RobotStatePublisherNode(Node):
    def __init__(self):
        super().__init__(NODE_NAME)
        settings = declare_settings(self, RobotStatePublisherSettings, None)  # no file: the defaults, or `config_file`
        urdf_path = resolve_urdf_path(settings.urdf_path or None)
        frequency = settings.publish_frequency
        if frequency <= 0:
            raise ValueError(f"publish_frequency must be positive, got {frequency}")
        self.prefix = settings.frame_prefix
        self.core = RobotStatePublisherCore(urdf_path)
        self.stats = PipelineStats()
        self._tf_bytes = TfMessagePacker()
        self.description_pub = self.create_publisher(String, ROBOT_DESCRIPTION_TOPIC, LATCHED_QOS)
        self.static_pub = self.create_publisher(TFMessage, TF_STATIC_TOPIC, LATCHED_QOS)
        self.tf_pub = self.create_publisher(TFMessage, TF_TOPIC, TF_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, LIVE_QOS)
        self.description_pub.publish(String(data=self.core.description))
        static = self.core.static_transforms()
        self.static_pub.publish(stamped_transforms(static, self.get_clock().now().to_msg(), self.prefix))
        # Taken at publish_frequency, the newest (rynn_common.polled_input): the 80 of 100 joint states a second
        # between two /tf updates are neither deserialised nor handed to an executor callback.
        self.joint_states_input = PolledSubscription(self, JointState, JOINT_STATES_TOPIC, LIVE_QOS)
        create_steady_timer(self, 1.0 / frequency, self._publish_tf)
        create_steady_timer(self, 1.0, self._publish_diagnostics)
        self.get_logger().info(
            f"robot state publisher up: {urdf_path.name}, {len(static)} fixed and {len(self.core.moving_joints)} "
            f"moving joints from {self.core.root_link}, /tf at <= {frequency:g} Hz")

    def _publish_tf(self) -> None:
        """The newest joint state since the last tick as /tf; nothing when none came."""
        taken = self.joint_states_input.take_newest()
        if taken is None:
            return
        try:
            msg = deserialize(taken[0], JointState)
        except ValueError as error:  # bytes no JointState serializes to: counted, said, skipped
            self.stats.reject("malformed_joint_states")
            self.get_logger().warning(str(error), throttle_duration_sec=5.0)
            return
        transforms = self.core.update(msg.name, msg.position)
        if not transforms:
            return
        stamp = msg.header.stamp
        stamp_ns = stamp.sec * 1_000_000_000 + stamp.nanosec if (stamp.sec or stamp.nanosec) else self.get_clock().now().nanoseconds
        self.tf_pub.publish(transforms_bytes(self._tf_bytes, transforms, stamp_ns, self.prefix))
        self.stats.count_output()

    def destroy_node(self):
        self.joint_states_input.destroy()
        super().destroy_node()

    def _publish_diagnostics(self) -> None:
        self.stats.set_totals(rejected=self.core.drops)
        stamp = self.get_clock().now().to_msg()
        self.diagnostics_pub.publish(make_diagnostics(self.stats, NODE_NAME, self.core.urdf_path.name, stamp))


def main(args=None) -> None:
    run_node(RobotStatePublisherNode, args)


if __name__ == "__main__":
    main()
