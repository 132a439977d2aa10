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

A real -> digital switch, and every ``reanchor_every`` frames, re-anchors the
stream on the newest real frame when one exists (else on the last generated
frame). Generation that stalls or dies stops the stream: frames are never
repeated or restamped. Status: ``/rynn/status`` (TeleopStatus) and ``/diagnostics``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path

import cv2
import numpy as np
import torch
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rynn_teleop_msgs.msg import BimanualSkeleton, TeleopStatus
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import String

from rynn_retarget.description import D435I_COLOR
from rynn_retarget.node_runner import run_node
from rynn_retarget.pipeline_stats import PipelineStats
from rynn_retarget.ros_conversions import (
    bimanual_skeleton_to_arrays,
    make_diagnostics,
    make_teleop_status,
    seconds_from_time,
    time_from_seconds,
)
from rynn_robot_bridge.ros_camera import image_to_rgb, make_camera_info, make_image
from rynn_world.model.configs import get_config
from rynn_world.nodes.model_loading import load_streaming_model

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATEST_ONLY = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
CAMERA_QOS = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
MODE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class WorldModelNode(Node):
    def __init__(self):
        super().__init__("world_model_node")
        declare = self.declare_parameter
        declare("model_config", "embedded_cpu")
        declare("checkpoint", "")
        declare("device", "auto")
        declare("torch_threads", 0)  # CPU threads for the model; 0 = torch's default (all cores)
        declare("seed", 0)
        declare("reference_image", "")
        declare("reanchor_every", 81)
        declare("follow_mode", True)
        declare("camera_width", D435I_COLOR.width)
        declare("camera_height", D435I_COLOR.height)
        declare("frame_id", "camera_color_optical_frame")
        declare("skeleton_topic", "/rynn/operator/skeleton_camera")
        declare("real_image_topic", "/rynn/real/camera/color/image_raw")
        declare("image_topic", "/rynn/digital/camera/color/image_raw")
        declare("camera_info_topic", "/rynn/digital/camera/color/camera_info")
        declare("mode_topic", "/rynn/mode")
        declare("status_rate_hz", 2.0)
        declare("skeleton_timeout_s", 0.5)
        get = lambda name: self.get_parameter(name).value  # noqa: E731

        self.stats = PipelineStats()
        config = get_config(get("model_config"))
        if int(get("torch_threads")) > 0:
            torch.set_num_threads(int(get("torch_threads")))  # share the cores with the other nodes
        device = get("device")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model, described = load_streaming_model(config, get("checkpoint"), device, int(get("seed")))
        if "random" in described:
            self.stats.set_fault("untrained_model", described)
            self.get_logger().warning(described)
        self.get_logger().info(f"world model {config.name} ({described}) on {device}, {config.width}x{config.height} @ {config.fps:g} FPS")

        self.frame_id = get("frame_id")
        self.intrinsics = D435I_COLOR.scaled(int(get("camera_width")), int(get("camera_height")))
        self.reanchor_every = int(get("reanchor_every"))
        self.skeleton_timeout = float(get("skeleton_timeout_s"))
        self.skeleton_received = float("-inf")  # monotonic time of the newest skeleton
        self.follow_mode = bool(get("follow_mode"))
        self.lock = threading.Lock()
        self.real_frame: np.ndarray | None = None
        self.file_reference = self._read_reference(get("reference_image"))
        self.mode = None if self.follow_mode else "digital"
        self.needs_anchor = True
        self.frames_since_anchor = 0
        self.last_frame: np.ndarray | None = None
        self.last_stamp = float("-inf")  # published stamps only ever increase

        self.image_pub = self.create_publisher(Image, get("image_topic"), CAMERA_QOS)
        self.info_pub = self.create_publisher(CameraInfo, get("camera_info_topic"), CAMERA_QOS)
        self.status_pub = self.create_publisher(TeleopStatus, "/rynn/status", RELIABLE)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", RELIABLE)
        self.create_subscription(BimanualSkeleton, get("skeleton_topic"), self.on_skeleton, RELIABLE)
        self.create_subscription(Image, get("real_image_topic"), self.on_real_image, LATEST_ONLY)
        self.create_subscription(String, get("mode_topic"), self.on_mode, MODE_QOS)
        self.create_timer(1.0 / float(get("status_rate_hz")), self.publish_status)

        self.outbox: deque = deque()  # (monotonic due time, frame, stamp) for the publisher thread
        self.outbox_ready = threading.Condition()
        self._running = True
        self._threads = [
            threading.Thread(target=self.generate_loop, name="world-model", daemon=True),
            threading.Thread(target=self.publish_loop, name="world-model-publish", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # --- inputs ---------------------------------------------------------------
    def _read_reference(self, path: str) -> np.ndarray | None:
        if not path:
            return None
        image = cv2.imread(str(Path(path).expanduser()), cv2.IMREAD_COLOR)
        if image is None:
            raise FileNotFoundError(f"reference_image {path!r} cannot be read as an image")
        return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)

    def on_mode(self, msg: String) -> None:
        if not self.follow_mode:
            return
        with self.lock:
            if msg.data == "digital" and self.mode != "digital":
                self.needs_anchor = True  # continue from the current real scene
            changed, self.mode = msg.data != self.mode, msg.data
        if changed:
            self.get_logger().info(f"mode {msg.data}: {'streaming' if msg.data == 'digital' else 'idle'}")
        if msg.data != "digital":
            with self.outbox_ready:
                self.outbox.clear()  # the digital robot is off: nothing more from it

    def on_real_image(self, msg: Image) -> None:
        try:
            frame = image_to_rgb(msg)
        except ValueError as error:
            self.stats.reject("real_image")
            self.get_logger().warning(f"ignoring a real camera frame: {error}", throttle_duration_sec=5.0)
            return
        with self.lock:
            self.real_frame = frame

    def on_skeleton(self, msg: BimanualSkeleton) -> None:
        arrays = bimanual_skeleton_to_arrays(msg)
        joints = arrays["joints"]
        wrists = joints[:, 0]
        forearms = np.stack([arrays["elbows"], wrists], axis=1)  # (2, [elbow, wrist], 3); NaN = unknown
        try:
            with self.lock:
                self.model.push_skeleton(joints, seconds_from_time(msg.header.stamp), forearms, arrays["valid"])
                self.skeleton_received = time.monotonic()
        except ValueError as error:  # stamps going backwards, wrong shapes
            self.stats.drop("skeleton")
            self.get_logger().warning(f"dropped a skeleton: {error}", throttle_duration_sec=5.0)
        except RuntimeError:
            self.stats.drop("skeleton_before_reference")

    # --- generation -------------------------------------------------------------
    def generate_loop(self) -> None:
        period = self.model.frames_per_step / self.model.config.fps
        self.next_step = time.monotonic()
        while self._running:
            with self.lock:
                active = self.mode == "digital"
            if not active or not self._anchor_if_needed():
                self.next_step = time.monotonic()
                time.sleep(0.02)
                continue
            if not self._input_ready(period):
                time.sleep(0.005)
                continue
            try:
                with self.lock, self.stats.timed("step"):
                    frames = self.model.step()
                    stamps = list(self.model.last_stamps)
            except Exception as error:  # noqa: BLE001 - report, stop the stream, keep the node alive
                self.stats.set_fault("generation", f"world model failed: {error}")
                self.get_logger().error(f"world model step failed, stream stopped: {error}")
                with self.outbox_ready:
                    self.outbox.clear()  # never publish frames of a dead stream
                return
            with self.lock:
                still_active = self.mode == "digital"
            if still_active:
                self._publish(frames, stamps)
            else:
                self.stats.drop("mode_changed_during_step", len(frames))

    def _input_ready(self, period: float) -> bool:
        """Step when the skeleton stream has reached the block's last frame time; without a
        live stream (none yet, or silent), hold the last skeleton and pace by the wall clock."""
        with self.lock:
            resampler = self.model.resampler
            block_end = resampler.next_block_end(self.model.frames_per_step)
            newest = resampler.newest_stamp
            live = time.monotonic() - self.skeleton_received < self.skeleton_timeout
        if live and block_end is None:
            return False  # a re-anchor just emptied the clock; the next skeleton is moments away
        if live:
            if newest - block_end > period:
                self.stats.drop("behind_realtime")  # the clock jumps to the newest skeleton
            self.next_step = time.monotonic()
            return block_end <= newest
        if time.monotonic() < self.next_step:
            return False
        self.next_step += period
        if time.monotonic() - self.next_step > period:  # slower than real time: no bursts
            self.next_step = time.monotonic()
        return True

    def _anchor_if_needed(self) -> bool:
        """Reset the stream on the best reference available; False while there is none."""
        with self.lock:
            periodic = self.frames_since_anchor >= self.reanchor_every
            if not (self.needs_anchor or periodic):
                return True
            reference = self.real_frame if self.real_frame is not None else self.last_frame
            if reference is None:
                reference = self.file_reference
            if reference is None:
                self.stats.set_fault("no_reference", "no reference image: set reference_image or publish the real camera")
                return False
            self.stats.clear_fault("no_reference")
            with self.stats.timed("reanchor"):
                self.model.reset(reference, keep_clock=periodic and not self.needs_anchor)
            self.needs_anchor = False
            self.frames_since_anchor = 0
            return True

    def _publish(self, frames: np.ndarray, stamps: list[float]) -> None:
        """Queue a block's frames for the publisher thread, spaced one model period apart
        (a camera's cadence, which reliable subscribers with short queues can keep up with)."""
        period = 1.0 / self.model.config.fps
        if not stamps:  # no skeleton yet: null action frames represent "now"
            now = self.get_clock().now().nanoseconds * 1e-9
            stamps = [now - (len(frames) - 1 - i) * period for i in range(len(frames))]
        with self.lock:
            self.frames_since_anchor += len(frames)
            self.last_frame = frames[-1]
        with self.outbox_ready:
            due = max(time.monotonic(), self.outbox[-1][0] + period if self.outbox else 0.0)
            for i, (frame, stamp) in enumerate(zip(frames, stamps)):
                self.outbox.append((due + i * period, frame, stamp))
            self.outbox_ready.notify()

    def publish_loop(self) -> None:
        """Publish queued frames when due; a frame less than half a period after the last one
        (null-action frames meeting the skeleton clock) is dropped, so the stream keeps a
        camera's spacing."""
        size = (self.intrinsics.width, self.intrinsics.height)
        frame_period = 1.0 / self.model.config.fps
        while self._running:
            with self.outbox_ready:
                self.outbox_ready.wait_for(lambda: self.outbox or not self._running, timeout=0.1)
                if not self.outbox:
                    continue
                due, frame, stamp = self.outbox[0]
                if due > time.monotonic():
                    self.outbox_ready.wait(due - time.monotonic())
                    continue
                self.outbox.popleft()
            if stamp < self.last_stamp + 0.5 * frame_period:  # e.g. null-action frames overtaken by skeletons
                self.stats.drop("frame_not_newer")
                continue
            self.last_stamp = stamp
            stamp_msg = time_from_seconds(stamp)
            image = frame if frame.shape[1::-1] == size else cv2.resize(frame, size, interpolation=cv2.INTER_LINEAR)
            self.image_pub.publish(make_image(image, stamp_msg, self.frame_id))
            self.info_pub.publish(make_camera_info(self.intrinsics, stamp_msg, self.frame_id))
            self.stats.outputs += 1

    def publish_status(self) -> None:
        for stage, seconds in self.model.timings.last.items():
            if seconds:
                self.stats.record(stage, seconds)
        mode = {"real": TeleopStatus.MODE_REAL, "digital": TeleopStatus.MODE_DIGITAL}.get(self.mode, TeleopStatus.MODE_UNKNOWN)
        stamp = self.get_clock().now().to_msg()
        self.status_pub.publish(make_teleop_status(self.stats, self.get_name(), mode, stamp))
        self.diagnostics_pub.publish(make_diagnostics(self.stats, f"{self.get_name()}: world model", "world_model", stamp))

    def destroy_node(self):
        self._running = False
        for thread in self._threads:
            thread.join(timeout=5.0)
        super().destroy_node()


def main(args=None):
    run_node(WorldModelNode, args, threads=2)


if __name__ == "__main__":
    main()
