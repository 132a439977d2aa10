"""The demo's operator console over DDS: switch modes, start/stop recorded episodes, and
watch the canonical camera and /rynn/status while it happens."""

from __future__ import annotations

import json
import subprocess
import time

import rclpy
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rynn_teleop_msgs.msg import TeleopStatus
from rynn_teleop_msgs.srv import SetMode
from sensor_msgs.msg import Image
from std_msgs.msg import String
from std_srvs.srv import Trigger
from tqdm import tqdm

from rynn_common.qos import LATCHED_QOS, LIVE_QOS
from rynn_common.ros_names import IMAGE_TOPIC, MODE_TOPIC, RECORDER_SERVICES, SET_MODE_SERVICE, STATUS_TOPIC
from rynn_common.service_calls import ServiceCaller, node_service_caller

MODE_CODES = {"real": SetMode.Request.MODE_REAL, "digital": SetMode.Request.MODE_DIGITAL}
SERVICE_TIMEOUT_S = 30.0


class DemoSession:
    def __init__(self):
        rclpy.init()
        self.node = rclpy.create_node("rynn_demo")
        self.mode: str | None = None
        self.camera_frames = 0
        self.latencies: dict[str, float] = {}  # "<source>/<stage>" -> latest p50 [s]
        # raw: the demo counts frames (the bag holds them), so it never deserialises 230-900 kB images
        self.node.create_subscription(Image, IMAGE_TOPIC, self._on_image, LIVE_QOS, raw=True)
        self.node.create_subscription(String, MODE_TOPIC, self._on_mode, LATCHED_QOS)
        self.node.create_subscription(TeleopStatus, STATUS_TOPIC, self._on_status, LIVE_QOS)
        # Service callers, not bare clients: a request lost to a respawned recorder is sent again.
        self.set_mode = node_service_caller(self.node, SetMode, SET_MODE_SERVICE)
        self.start = node_service_caller(self.node, Trigger, RECORDER_SERVICES["start"])
        self.stop = node_service_caller(self.node, Trigger, RECORDER_SERVICES["stop"])
        self.recorder_parameters = node_service_caller(self.node, SetParameters, "/rynn_recorder/set_parameters")

    def _on_image(self, _data: bytes) -> None:
        self.camera_frames += 1

    def _on_mode(self, msg: String) -> None:
        self.mode = msg.data

    def _on_status(self, msg: TeleopStatus) -> None:
        for latency in msg.latencies:
            self.latencies[f"{msg.source}/{latency.stage}"] = latency.p50

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rclpy.spin_once(self.node, timeout_sec=min(0.05, max(end - time.monotonic(), 0.0)))

    def wait_for_camera(self, timeout: float, launcher: subprocess.Popen, mode: str, frames: int = 5) -> None:
        """Until the bridge is in ``mode`` and the canonical camera delivered ``frames`` new images."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            if launcher.poll() is not None:
                raise RuntimeError(f"the teleoperation graph stopped (exit {launcher.returncode}); see launcher.log")
            self.spin_for(0.2)
            if self.mode == mode and seen is None:
                seen = self.camera_frames
            if seen is not None and self.camera_frames - seen >= frames:
                return
        raise TimeoutError(f"no {mode}-mode camera images within {timeout:.0f} s (mode {self.mode!r}); see logs/")

    def switch_mode(self, mode: str, launcher: subprocess.Popen, timeout: float = 60.0) -> None:
        """SetMode, retried while the bridge refuses (e.g. robot state not known yet)."""
        deadline = time.monotonic() + timeout
        reason = "no answer"
        while time.monotonic() < deadline and launcher.poll() is None:
            response = self._call(self.set_mode, SetMode.Request(mode=MODE_CODES[mode]))
            if response.success:
                print(f"switched to {mode}: {response.message}", flush=True)
                return
            reason = response.message
            self.spin_for(1.0)
        raise RuntimeError(f"the bridge refused the switch to {mode}: {reason}")

    def record_episode(self, task: str, seconds: float, mode: str, progress: bool) -> dict:
        self._set_recorder_task(task)
        started = self._call(self.start, Trigger.Request())
        if not started.success:
            raise RuntimeError(f"recorder did not start: {started.message}")
        frames_before, t0 = self.camera_frames, time.monotonic()
        with tqdm(total=round(seconds), desc=f"recording {mode}", unit="s", disable=not progress) as bar:
            while (elapsed := time.monotonic() - t0) < seconds:
                self.spin_for(min(0.5, seconds - elapsed))
                bar.update(min(round(time.monotonic() - t0), round(seconds)) - bar.n)
                bar.set_postfix(frames=self.camera_frames - frames_before)
        elapsed = time.monotonic() - t0
        stopped = self._call(self.stop, Trigger.Request())
        if not stopped.success:
            raise RuntimeError(f"recorder did not stop: {stopped.message}")
        frames = self.camera_frames - frames_before
        return {
            "bag": started.message,
            "mode": mode,
            "task": task,
            "seconds": elapsed,
            "camera_frames": frames,
            "camera_fps": frames / elapsed,
            "recorder": json.loads(stopped.message),
            "latency_p50_ms": {k: v * 1e3 for k, v in sorted(self.latencies.items())},
        }

    def _set_recorder_task(self, task: str) -> None:
        value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=task)
        request = SetParameters.Request(parameters=[Parameter(name="task", value=value)])
        result = self._call(self.recorder_parameters, request).results[0]
        if not result.successful:
            raise RuntimeError(f"recorder refused task {task!r}: {result.reason}")

    def _call(self, caller: ServiceCaller, request):
        answer = caller.call(request, lambda seconds: rclpy.spin_once(self.node, timeout_sec=seconds), SERVICE_TIMEOUT_S)
        if answer is None:
            raise RuntimeError(f"service {caller.name} was not available or did not answer within {SERVICE_TIMEOUT_S:.0f} s")
        return answer

    def close(self) -> None:
        self.node.destroy_node()
        rclpy.try_shutdown()
