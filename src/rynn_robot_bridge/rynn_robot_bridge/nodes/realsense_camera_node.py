"""RealSense colour camera node: what realsense2_camera publishes for colour, from pyrealsense2.

For a lab without the realsense2_camera driver (the PyPI install). Parameters use
realsense2_camera's names: ``serial_no`` (empty: the first device found),
``rosbag_filename`` (play a librealsense recording instead of a device),
``camera_namespace``/``camera_name`` (topics ``/<namespace>/<name>/color/{image_raw,
camera_info}``, frame ``<name>_color_optical_frame``; defaults give realsense2_camera's
``/camera/camera/color/...`` and ``camera_color_optical_frame``) and
``rgb_camera.color_profile`` ("width,height,fps"); ``playback_repeat`` loops a recording.
Images are rgb8, CameraInfo carries the device's intrinsics and distortion, both share the frame's hardware timestamp mapped to ROS
time, published RELIABLE like the simulated camera. A missing device or an unreadable
recording stops the node with one line saying which and why.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image

from rynn_common.clock_steps import create_steady_timer
from rynn_common.node_runner import run_node
from rynn_common.node_settings import declare_settings
from rynn_common.pipeline_stats import PipelineStats
from rynn_common.qos import CAMERA_DRIVER_QOS, LIVE_QOS
from rynn_common.ros_conversions import make_diagnostics
from rynn_common.ros_names import DIAGNOSTICS_TOPIC
from rynn_robot_bridge.realsense_source import CameraSourceError, RealSenseColorStream, RealSenseSettings
from rynn_robot_bridge.ros_camera import make_camera_info, make_image

READ_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class ColorStreamSettings:
    color_profile: str = "640,480,30"  # "width,height,fps"


@dataclass(frozen=True)
class RealSenseNodeSettings:
    """The node's parameters, named as realsense2_camera's."""

    serial_no: str = ""  # empty: the first device found
    rosbag_filename: str = ""  # play this recording instead of a device
    camera_namespace: str = "camera"
    camera_name: str = "camera"
    rgb_camera: ColorStreamSettings = field(default_factory=ColorStreamSettings)
    playback_real_time: bool = True
    playback_repeat: bool = False


def parse_color_profile(text: str) -> tuple[int, int, int]:
    """realsense2_camera's "width,height,fps" -> ints; ``ValueError`` naming the bad value."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"rgb_camera.color_profile {text!r} must be 'width,height,fps' (positive integers)")
    width, height, fps = map(int, parts)
    return width, height, fps


class RealSenseCameraNode(Node):
    def __init__(self):
        super().__init__("realsense_camera")
        settings = declare_settings(self, RealSenseNodeSettings, None)  # no file: the defaults, or `config_file`
        serial, recording = settings.serial_no, settings.rosbag_filename
        namespace, name = settings.camera_namespace.strip("/"), settings.camera_name
        width, height, fps = parse_color_profile(settings.rgb_camera.color_profile)
        real_time, repeat = settings.playback_real_time, settings.playback_repeat
        self.frame_id = f"{name}_color_optical_frame"
        prefix = "/" + "/".join(p for p in (namespace, name, "color") if p)
        self.stream = RealSenseColorStream(RealSenseSettings(serial, recording, width, height, fps, real_time, repeat))
        self.calibration = self.stream.open()  # CameraSourceError: no device, unreadable file
        self.image_pub = self.create_publisher(Image, f"{prefix}/image_raw", CAMERA_DRIVER_QOS)
        self.info_pub = self.create_publisher(CameraInfo, f"{prefix}/camera_info", CAMERA_DRIVER_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, LIVE_QOS)
        self.stats = PipelineStats()  # outputs = frames published; drops: read timeouts; fault: device errors
        create_steady_timer(self, 1.0, self._publish_diagnostics)
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name="realsense_reader", daemon=True)
        self._reader.start()
        source = f"recording {recording}" if recording else f"device {self.stream.serial_number}"
        intrinsics = self.calibration.intrinsics
        self.get_logger().info(
            f"realsense camera up: {self.stream.device_name} ({source}) colour {intrinsics.width}x{intrinsics.height} "
            f"-> {prefix}/image_raw in {self.frame_id}")

    def _read_loop(self) -> None:
        """Frames as they come; a timeout or a device error is counted and logged, and reading goes on."""
        while not self._stop.is_set():
            try:
                frame = self.stream.read(READ_TIMEOUT_S)
            except RuntimeError as exc:  # e.g. the camera was unplugged
                self.stats.set_fault("device", f"reading the camera failed: {exc}")
                self.get_logger().error(f"reading the camera failed: {exc}", throttle_duration_sec=5.0)
                self._stop.wait(READ_TIMEOUT_S)
                continue
            if frame is not None:
                self.stats.clear_fault("device")
                self.publish(frame.rgb, frame.stamp_ns)
            elif self.stream.finished:
                self.get_logger().info(f"recording finished after {self.stats.outputs} frames")
                return
            else:
                self.stats.drop("no frame within read timeout")
                self.get_logger().warning(f"no colour frame for {READ_TIMEOUT_S:g} s", throttle_duration_sec=5.0)

    def _publish_diagnostics(self) -> None:
        stamp = self.get_clock().now().to_msg()
        self.diagnostics_pub.publish(make_diagnostics(self.stats, self.get_name(), self.stream.serial_number, stamp))

    def publish(self, rgb, stamp_ns: int) -> None:
        """Image and CameraInfo under one stamp, as realsense2_camera publishes them."""
        stamp = Time(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)
        calibration = self.calibration
        self.image_pub.publish(make_image(rgb, stamp, self.frame_id))
        self.info_pub.publish(make_camera_info(calibration.intrinsics, stamp, self.frame_id,
                                               calibration.distortion_model, calibration.distortion))
        self.stats.count_output()

    def destroy_node(self):
        self._stop.set()
        self._reader.join(timeout=2 * READ_TIMEOUT_S)
        self.stream.close()
        super().destroy_node()


def main(args=None) -> None:
    try:
        run_node(RealSenseCameraNode, args)
    except (CameraSourceError, ValueError) as exc:
        sys.exit(f"realsense_camera_node: {exc}")


if __name__ == "__main__":
    main()
