"""ROS 2 shell of the simulated robot: LCM in/out like the real TIANJI M6, camera like realsense2_camera.

All behaviour lives in ``rynn_robot_bridge.sim``; this node only reads
parameters and turns rendered frames into Image + CameraInfo pairs.
"""

from __future__ import annotations

import logging

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image

from rynn_retarget.description import D435I_COLOR
from rynn_retarget.node_runner import run_node
from rynn_retarget.ros_conversions import time_from_seconds
from rynn_robot_bridge.config import load_robot_config
from rynn_robot_bridge.ros_camera import CAMERA_INFO_TOPIC, IMAGE_TOPIC, make_camera_info, make_image
from rynn_robot_bridge.sim.realtime import RealtimeSimRobot
from rynn_robot_bridge.sim.simulator import SimulatedRobot

# RELIABLE like realsense2_camera's default: matches both reliable and best-effort subscribers.
CAMERA_QOS = QoSProfile(
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
    history=HistoryPolicy.KEEP_LAST,
    depth=5,
)


class SimRobotNode(Node):
    def __init__(self):
        super().__init__("sim_robot")
        defaults = load_robot_config()
        declared = {
            "config_file": "",
            "lcm_url": "",
            "scene": defaults.sim.scene,
            "seed": defaults.sim.seed,
            "image_width": defaults.sim.image_width,
            "image_height": defaults.sim.image_height,
            "render_rate_hz": defaults.sim.render_rate_hz,
        }
        for name, value in declared.items():
            self.declare_parameter(name, value)
        param = {name: self.get_parameter(name).value for name in declared}
        config = load_robot_config(param["config_file"] or None)
        if param["lcm_url"]:
            config = config.with_lcm_url(param["lcm_url"])
        config = config.with_sim(
            scene=param["scene"], seed=int(param["seed"]), image_width=int(param["image_width"]),
            image_height=int(param["image_height"]), render_rate_hz=float(param["render_rate_hz"]),
        )
        self.intrinsics = D435I_COLOR.scaled(config.sim.image_width, config.sim.image_height)
        robot = SimulatedRobot(
            scene=config.sim.scene,
            seed=config.sim.seed,
            urdf_path=config.sim.urdf_path or None,
            camera=self.intrinsics,
            control_rate_hz=config.controller.control_rate_hz,
            command_delay_s=config.controller.command_delay_ms / 1000.0,
        )
        self.image_pub = self.create_publisher(Image, IMAGE_TOPIC, CAMERA_QOS)
        self.info_pub = self.create_publisher(CameraInfo, CAMERA_INFO_TOPIC, CAMERA_QOS)
        self.runtime = RealtimeSimRobot(config, robot, on_frame=self._publish_frame)
        self.runtime.start()
        self.get_logger().info(
            f"simulated robot up: scene={config.sim.scene} seed={config.sim.seed} "
            f"lcm={config.lcm.url} command={config.lcm.command_channel} state={config.lcm.state_channel} "
            f"camera {config.sim.image_width}x{config.sim.image_height} @ {config.sim.render_rate_hz} Hz"
        )

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
