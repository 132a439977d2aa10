"""World-model node: the digital robot's camera, generated from the operator's hands.

Subscribes to the operator skeleton in the robot camera frame
(``/rynn/operator/skeleton_camera`` from the retarget node), the real camera's
private topic (the newest real frame is the reference image), and the bridge's
transient-local ``/rynn/mode``. While the mode is "digital" (or always, with
``follow_mode:=false``) it streams the causal world model at the model's frame
rate, always conditioned on the newest skeleton, and publishes
``sensor_msgs/Image`` + ``CameraInfo`` on private topics that the bridge relays
to the canonical camera topics: rgb8, resized to the configured camera
resolution, frame ``camera_color_optical_frame``, the camera's intrinsics,
stamped with the time each frame represents (its skeleton's clock tick).

A thin shell: pacing, anchoring (on the newest real frame at a real -> digital
switch; while digital the real robot holds, so periodic re-anchors continue from
the last generated frame) and frame scheduling live in ``rynn_world.live_session.LiveWorldSession``; this node only
converts messages, runs the session's generation and publishing threads, and
publishes. Callbacks never wait for a generation step. Frames that cannot be
shown in time are dropped and counted; generation that fails stops the stream
(frames are never repeated or restamped). Status: ``/rynn/status``
(TeleopStatus) and ``/diagnostics``.

Settings: rynn_world's config/world_model.yaml (``config_file`` replaces it), every key a
parameter of the same name; an explicit parameter wins over the file (rynn_common.node_settings).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import cv2
import numpy as np
import torch
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rynn_teleop_msgs.msg import BimanualSkeleton, TeleopStatus
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import String

from rynn_common.cdr import deserialize
from rynn_common.clock_steps import create_steady_timer
from rynn_common.config_paths import find_config
from rynn_common.description import D435I_COLOR
from rynn_common.node_runner import run_node
from rynn_common.node_settings import declare_settings
from rynn_common.pipeline_stats import PipelineStats
from rynn_common.qos import DIGITAL_CAMERA_QOS, LATCHED_QOS, LATEST_ONLY_QOS, LIVE_QOS, RECORDED_CAMERA_QOS, STATUS_QOS
from rynn_common.ros_conversions import make_diagnostics, make_teleop_status, seconds_from_time, time_from_seconds
from rynn_common.ros_names import DIAGNOSTICS_TOPIC, STATUS_TOPIC
from rynn_robot_bridge.camera_messages import image_to_rgb
from rynn_robot_bridge.ros_camera import make_camera_info, make_image
from rynn_world.live_session import LiveWorldSession, SessionSettings
from rynn_world.model.configs import get_config
from rynn_world.nodes.model_loading import load_streaming_model
from rynn_world.nodes.world_model_settings import WorldModelNodeSettings
from rynn_world.skeleton import ControlSample


class WorldModelNode(Node):
    def __init__(self):
        super().__init__("world_model_node")
        settings = declare_settings(self, WorldModelNodeSettings, find_config("rynn_world", "world_model.yaml"))
        self.stats = PipelineStats()
        config = get_config(settings.model_config)
        set_torch_threads(settings.torch_threads)
        device = settings.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.intrinsics = D435I_COLOR.scaled(settings.camera_width, settings.camera_height)
        model, described = load_streaming_model(config, settings.checkpoint, device, settings.seed, settings.vae_kernels,
                                                self.intrinsics, settings.decoder, settings.encoder, settings.static_camera)
        if "random" in described:
            self.stats.set_fault("untrained_model", described)
            self.get_logger().warning(described)
        self.get_logger().info(f"world model {config.name} ({described}) on {device}, {config.width}x{config.height} @ {config.fps:g} FPS, "
                               f"torch threads {torch.get_num_threads()}")

        self.frame_id = settings.frame_id
        control_topic = settings.control_frame_topic
        self.control_pub = self.create_publisher(Image, control_topic, LIVE_QOS) if control_topic else None
        session_settings = SessionSettings(
            reanchor_every=settings.reanchor_every or None,
            skeleton_timeout=settings.skeleton_timeout_s,
            max_frame_age=settings.max_frame_age_s,
            publish_interval=settings.publish_interval_s or None,
            follow_mode=settings.follow_mode,
        )
        self.session = LiveWorldSession(model, self.stats, session_settings, clock=self._now,
                                        convert_real_frame=lambda raw: image_to_rgb(deserialize(raw, Image)),
                                        file_reference=self._read_reference(settings.reference_image), warn=self._warn,
                                        on_control=self.publish_control if self.control_pub else None,
                                        monotonic=time.monotonic)  # notices steps of the ROS (wall) clock

        self.image_pub = self.create_publisher(Image, settings.image_topic, DIGITAL_CAMERA_QOS)
        self.info_pub = self.create_publisher(CameraInfo, settings.camera_info_topic, RECORDED_CAMERA_QOS)
        self.status_pub = self.create_publisher(TeleopStatus, STATUS_TOPIC, STATUS_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, LIVE_QOS)
        # raw: bytes no message serializes to are counted (a typed subscription drops them unseen); a real frame
        # is deserialized only when an anchor uses it (convert_real_frame)
        self.create_subscription(BimanualSkeleton, settings.skeleton_topic, self.on_skeleton, LIVE_QOS, raw=True)
        self.create_subscription(Image, settings.real_image_topic, self.session.offer_real_frame, LATEST_ONLY_QOS, raw=True)
        self.create_subscription(String, settings.mode_topic, self.on_mode, LATCHED_QOS, raw=True)
        create_steady_timer(self, 1.0 / settings.status_rate_hz, self.publish_status)

        self._running = True
        self._threads = [
            threading.Thread(target=self.generate_loop, name="world-model", daemon=True),
            threading.Thread(target=self.publish_loop, name="world-model-publish", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _warn(self, message: str) -> None:
        self.get_logger().warning(message, throttle_duration_sec=5.0)

    def _now(self) -> float:
        """The clock of the skeleton stamps and of the published frames."""
        return self.get_clock().now().nanoseconds * 1e-9

    # --- inputs (converted, handed over, never waiting for a step) -------------------------
    def _read_reference(self, path: str) -> np.ndarray | None:
        if not path:
            return None
        image = cv2.imread(str(Path(path).expanduser()), cv2.IMREAD_COLOR)
        if image is None:
            raise FileNotFoundError(f"reference_image {path!r} cannot be read as an image")
        return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)

    def on_mode(self, raw: bytes) -> None:
        try:
            msg = deserialize(raw, String)
        except ValueError as error:
            self.stats.reject("malformed_mode")
            self._warn(f"rejected a mode message: {error}")
            return
        if self.session.set_mode(msg.data):
            self.get_logger().info(f"mode {msg.data}: {'streaming' if msg.data == 'digital' else 'idle'}")

    def on_skeleton(self, raw: bytes) -> None:
        try:
            msg = deserialize(raw, BimanualSkeleton)
            sample = ControlSample.from_message(msg)
        except ValueError as error:
            self.stats.reject("malformed_skeleton")
            self._warn(f"rejected a skeleton: {error}")
            return
        self.session.offer_skeleton(sample, seconds_from_time(msg.header.stamp))

    def publish_control(self, frames: np.ndarray, stamps: list[float]) -> None:
        """Debug topic: each control frame at the model's size, stamped with its skeleton's stamp."""
        for frame, stamp in zip(frames, stamps):
            self.control_pub.publish(make_image(frame, time_from_seconds(stamp), self.frame_id))

    # --- the session's threads ---------------------------------------------------------------
    def generate_loop(self) -> None:
        while self._running:
            try:
                wait = self.session.run_once()
            except Exception as error:  # reported by the session; keep the node alive
                self.get_logger().error(f"world model step failed, stream stopped: {error}")
                return
            if wait > 0:
                self.session.wait_for_input(wait)

    def publish_loop(self) -> None:
        size = (self.intrinsics.width, self.intrinsics.height)
        while self._running:
            frame = self.session.wait_for_frame(timeout=0.1)
            if frame is None:
                continue
            with self.stats.timed("publish"):
                stamp = time_from_seconds(frame.stamp)
                image = frame.image
                if image.shape[1::-1] != size:
                    image = cv2.resize(image, size, interpolation=cv2.INTER_LINEAR)
                self.image_pub.publish(make_image(image, stamp, self.frame_id))
                self.info_pub.publish(make_camera_info(self.intrinsics, stamp, self.frame_id))
            self.stats.count_output()

    def publish_status(self) -> None:
        mode = {"real": TeleopStatus.MODE_REAL, "digital": TeleopStatus.MODE_DIGITAL}.get(self.session.mode, TeleopStatus.MODE_UNKNOWN)
        stamp = self.get_clock().now().to_msg()
        self.status_pub.publish(make_teleop_status(self.stats, self.get_name(), mode, stamp))
        self.diagnostics_pub.publish(make_diagnostics(self.stats, f"{self.get_name()}: world model", "world_model", stamp))

    def destroy_node(self):
        self._running = False
        for thread in self._threads:
            thread.join(timeout=5.0)
        super().destroy_node()


def set_torch_threads(threads: int) -> None:
    """Intra-op threads for the model (0 keeps torch's default); one inter-op thread. Two
    intra-op threads spin against the graph's other processes on a 2-core machine."""
    if threads > 0:
        torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process (e.g. nodes composed together)
        pass


def main(args=None):
    run_node(WorldModelNode, args)  # generation and publishing have their own threads; callbacks only hand over


if __name__ == "__main__":
    main()
