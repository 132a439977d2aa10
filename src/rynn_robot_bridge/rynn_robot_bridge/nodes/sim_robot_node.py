"""ROS 2 shell of the simulated robot: LCM in/out like the real TIANJI M6, camera like realsense2_camera.

All behaviour lives in ``rynn_robot_bridge.sim``; this node only reads its settings
(this package's config/robot.yaml, every key a parameter: ``sim.scene``, ``lcm.url``, ...;
an explicit parameter wins over the file) and turns rendered frames into Image + CameraInfo pairs.

It stands in for hardware whose CPU a deployment does not pay, so while the bridge's
mode (``/rynn/mode``, latched) is "digital" it renders only ``sim.digital_render_rate_hz``
frames a second (the world model needs a recent real frame to anchor on, nothing
else reads it); the mode turning "real" restores ``sim.render_rate_hz`` at once.
And while nothing subscribes to its camera (image or info), it renders nothing at all:
a frame nobody receives is CPU taken from the physics and the rest of the graph.
"""

from __future__ import annotations

import logging

from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import String

from rynn_common.config_paths import find_config
from rynn_common.description import D435I_COLOR
from rynn_common.node_runner import run_node
from rynn_common.node_settings import declare_settings
from rynn_common.qos import CAMERA_DRIVER_QOS, LATCHED_QOS
from rynn_common.ros_conversions import time_from_seconds
from rynn_common.ros_names import CAMERA_INFO_TOPIC, IMAGE_TOPIC
from rynn_robot_bridge.config import RobotConfig
from rynn_robot_bridge.ros_camera import make_camera_info, make_image
from rynn_robot_bridge.sim.realtime import RealtimeSimRobot
from rynn_robot_bridge.sim.simulator import SimulatedRobot


class SimRobotNode(Node):
    def __init__(self):
        super().__init__("sim_robot")
        config = declare_settings(self, RobotConfig, find_config("rynn_robot_bridge", "robot.yaml"))
        self.intrinsics = D435I_COLOR.scaled(config.sim.image_width, config.sim.image_height)
        robot = SimulatedRobot(
            scene=config.sim.scene,
            seed=config.sim.seed,
            urdf_path=config.sim.urdf_path or None,
            camera=self.intrinsics,
            control_rate_hz=config.controller.control_rate_hz,
            command_delay_s=config.controller.command_delay_ms / 1000.0,
        )
        self.image_pub = self.create_publisher(Image, IMAGE_TOPIC, CAMERA_DRIVER_QOS)
        self.info_pub = self.create_publisher(CameraInfo, CAMERA_INFO_TOPIC, CAMERA_DRIVER_QOS)
        self._camera_subscribed = True  # as the camera starts; the first frame due without a subscriber logs the pause
        self.runtime = RealtimeSimRobot(config, robot, on_frame=self._publish_frame, frame_wanted=self._frame_wanted)
        self.render_rates = {"real": config.sim.render_rate_hz,
                             "digital": min(config.sim.digital_render_rate_hz, config.sim.render_rate_hz)}
        if config.sim.render_rate_hz > 0:
            self.create_subscription(String, config.sim.mode_topic, self._on_mode, LATCHED_QOS)
        self.runtime.start()
        self.get_logger().info(
            f"simulated robot up: scene={config.sim.scene} seed={config.sim.seed} "
            f"lcm={config.lcm.url} command={config.lcm.command_channel} state={config.lcm.state_channel} "
            f"camera {config.sim.image_width}x{config.sim.image_height} @ {config.sim.render_rate_hz:g} Hz"
        )

    def _on_mode(self, msg: String) -> None:
        rate = self.render_rates.get(msg.data)
        if rate is None or rate <= 0:
            self.get_logger().warning(f"ignoring mode {msg.data!r} (render rates {self.render_rates})")
            return
        self.runtime.set_render_rate(rate)
        self.get_logger().info(f"mode {msg.data}: camera at {rate:g} Hz")

    def _frame_wanted(self) -> bool:
        """Asked by the camera thread when a frame is due: render only for a subscriber (DDS discovery keeps the
        counts current, no spinning needed)."""
        subscribed = self.image_pub.get_subscription_count() + self.info_pub.get_subscription_count() > 0
        if subscribed != self._camera_subscribed:
            self._camera_subscribed = subscribed
            self.get_logger().info("camera: rendering for its subscribers" if subscribed
                                   else "camera: no subscriber, not rendering")
        return subscribed

    def _publish_frame(self, rgb, captured_wall_time: float) -> None:
        """Image and CameraInfo share one stamp, as realsense2_camera's do."""
        stamp = time_from_seconds(captured_wall_time)
        self.image_pub.publish(make_image(rgb, stamp))
        self.info_pub.publish(make_camera_info(self.intrinsics, stamp))

    def destroy_node(self):
        self.runtime.stop()
        self.runtime.robot.close()
        super().destroy_node()


def main(args=None) -> None:
    logging.basicConfig(level=logging.INFO, format="[%(levelname)s] [%(name)s]: %(message)s")
    run_node(SimRobotNode, args)


if __name__ == "__main__":
    main()
