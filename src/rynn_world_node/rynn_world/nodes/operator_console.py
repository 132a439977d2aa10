"""Operator console node: the session in a browser (``http://127.0.0.1:8080`` by default).

Shows the canonical camera (``/camera/camera/color/image_raw``) large and the other source
small (the real camera while digital, the generated one while real), each with its measured
FPS and frame age, optionally with the operator skeleton (``/rynn/operator/skeleton_camera``)
drawn over it; a 3D view of the robot posed by ``/joint_states`` and, ghosted, by
``/rynn/command/joint_states``, with the operator trackers from ``/tf``; the mode (latched
``/rynn/mode``) with Real / Digital buttons (``/rynn/set_mode``); recording controls (the
recorder's ``task`` parameter and ``/rynn/recorder/{start,stop,discard}``) with the episode
directory, elapsed time and per-topic counts; Calibrate (the retarget node's ``~/calibrate``);
health from ``/rynn/status`` and ``/diagnostics`` with a banner when a required stream is stale.

The console costs nothing while no browser is connected: it subscribes when the first browser
connects and unsubscribes when the last one leaves. Frames go to the browser as JPEG at most
``max_fps`` times per second and ``max_width`` pixels wide. Service calls are asynchronous
(the executor never waits on another node); one call per control is in flight at a time.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage

from rynn_retarget.description import resolve_urdf_path
from rynn_retarget.node_runner import run_node
from rynn_retarget.ros_conversions import bimanual_skeleton_to_arrays, seconds_from_time
from rynn_robot_bridge.ros_camera import IMAGE_TOPIC, image_to_rgb
from rynn_teleop_msgs.msg import BimanualSkeleton, TeleopStatus
from rynn_teleop_msgs.srv import SetMode
from rynn_world.console.board import (
    RECORDER_SOURCE,
    DiagnosticReport,
    HealthBoard,
    PendingCalls,
    RecordingBoard,
    StageTiming,
    StatusReport,
    describe_mode_answer,
    describe_recorder_answer,
)
from rynn_world.console.frames import FramePacer, SkeletonOverlay, downscale
from rynn_world.console.page import ConsoleActions, ConsolePage
from rynn_world.console.pose import JointPoser
from rynn_world.console.streams import RequiredStream, StreamStats, stale_banner

NODE_NAME = "operator_console"
REAL_CAMERA_TOPIC = "/rynn/real/camera/color/image_raw"
DIGITAL_CAMERA_TOPIC = "/rynn/digital/camera/color/image_raw"
NEWEST = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
CAMERA_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
REPORTS_QOS = QoSProfile(depth=20, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
MODE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
TEXT_PERIOD_S = 0.5  # captions, health and recording text
SCENE_PERIOD_S = 0.1  # the 3D view: 10 Hz is smooth enough and keeps the console cheap
OTHER_CAMERA_FPS = 5.0


class LatestFrame:
    """The newest message of a camera stream and whether it was shown yet."""

    def __init__(self):
        self.msg: Image | None = None
        self.fresh = False
        self.stats = StreamStats()


class OperatorConsoleNode(Node):
    def __init__(self):
        super().__init__(NODE_NAME)
        declare = self.declare_parameter
        self.host = declare("host", "127.0.0.1").value
        port = int(declare("port", 8080).value)
        self.max_width = int(declare("max_width", 640).value)
        self.other_max_width = int(declare("other_max_width", 320).value)
        self.camera_pacer = FramePacer(float(declare("max_fps", 15.0).value))
        self.other_pacer = FramePacer(OTHER_CAMERA_FPS)
        jpeg_quality = int(declare("jpeg_quality", 70).value)
        urdf_path = resolve_urdf_path(declare("urdf_path", "").value or None)
        self.recorder = declare("recorder_node", RECORDER_SOURCE).value.strip("/")
        calibrate_service = declare("calibrate_service", "/retarget_node/calibrate").value
        self.camera_stale_s = float(declare("camera_stale_after_s", 2.0).value)
        self.service_timeout_s = float(declare("service_timeout_s", 10.0).value)
        operator_offset = tuple(float(v) for v in declare("operator_offset_xyz", [-1.0, 0.0, 0.0]).value)
        self.overlay_on = bool(declare("skeleton_overlay", False).value)
        self.operator_frame = declare("operator_frame", "operator_world").value  # the tracker node's frames.world

        self.set_mode_client = self.create_client(SetMode, "/rynn/set_mode")
        self.recorder_clients = {a: self.create_client(Trigger, f"/rynn/recorder/{a}") for a in ("start", "stop", "discard")}
        self.task_client = self.create_client(SetParameters, f"/{self.recorder}/set_parameters")
        self.calibrate_client = self.create_client(Trigger, calibrate_service)
        self.pending = PendingCalls(self.service_timeout_s)

        self.lock = threading.Lock()  # the web server's thread reads what the executor writes
        self.camera = LatestFrame()
        self.other = LatestFrame()
        self.other_topic = ""
        self.mode = ""
        self.skeleton: dict[str, np.ndarray] | None = None
        self.measured: JointState | None = None
        self.commanded: JointState | None = None
        self.trackers: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.stream_stats = {topic: StreamStats() for topic in ("/joint_states", "/rynn/status", "/tf")}
        self.health = HealthBoard()
        self.recording = RecordingBoard()
        self.dropped = 0
        self.overlay = SkeletonOverlay()
        self.required = [
            RequiredStream(IMAGE_TOPIC, "canonical camera", self.camera_stale_s),
            RequiredStream("/joint_states", "robot joint states", 1.0),
            RequiredStream("/rynn/status", "pipeline status", 3.0),
        ]

        self.clients_connected = 0
        self.watching_since = 0.0
        self.subscriptions_by_topic: dict[str, object] = {}
        self.wake = self.create_guard_condition(self._follow_browsers)
        self.refresh_timer = self.create_timer(self.camera_pacer.period, self._refresh)
        self.refresh_timer.cancel()  # runs only while a browser is connected
        self._next_text = self._next_scene = 0.0

        actions = ConsoleActions(self._request_mode, self._request_recorder, self._request_calibration,
                                 self._set_overlay, self._on_clients)
        self.page = ConsolePage(self.host, port, urdf_path, actions, jpeg_quality, operator_offset, self.overlay_on)
        self.measured_pose = JointPoser(self.page.joint_names)
        self.commanded_pose = JointPoser(self.page.joint_names)
        if port and self.page.port != port:
            self.get_logger().warning(f"port {port} is taken; serving on {self.page.port} instead")
        self.get_logger().info(f"operator console on http://{self.host}:{self.page.port}/ "
                               f"(JPEG <= {self.camera_pacer.period ** -1:.0f} FPS, <= {self.max_width} px wide)")

    # --- browsers come and go ------------------------------------------------------------------

    def _on_clients(self, count: int) -> None:
        """Web server thread: hand the change to the executor (subscriptions are made there)."""
        with self.lock:
            self.clients_connected = count
        self.wake.trigger()

    def _follow_browsers(self) -> None:
        with self.lock:
            watching = self.clients_connected > 0
        if watching and not self.subscriptions_by_topic:
            self.watching_since = time.monotonic()
            self._subscribe()
            self.refresh_timer.reset()
            self.get_logger().info("a browser connected: subscribed")
        elif not watching and self.subscriptions_by_topic:
            self.refresh_timer.cancel()
            for topic in list(self.subscriptions_by_topic):
                self._unsubscribe(topic)
            with self.lock:
                self.camera, self.other, self.other_topic = LatestFrame(), LatestFrame(), ""
                for stats in self.stream_stats.values():
                    stats.reset()
            self.get_logger().info("no browser connected: unsubscribed")
        elif watching:
            self._follow_mode_and_overlay()

    def _subscribe(self) -> None:
        subscribe = self._subscribe_one
        subscribe(Image, IMAGE_TOPIC, lambda msg: self._on_frame(self.camera, msg), CAMERA_QOS)
        subscribe(String, "/rynn/mode", self._on_mode, MODE_QOS)
        subscribe(JointState, "/joint_states", self._on_measured, NEWEST)
        subscribe(JointState, "/rynn/command/joint_states", self._on_commanded, NEWEST)
        subscribe(TFMessage, "/tf", self._on_tf, REPORTS_QOS)
        subscribe(TeleopStatus, "/rynn/status", self._on_status, REPORTS_QOS)
        subscribe(DiagnosticArray, "/diagnostics", self._on_diagnostics, REPORTS_QOS)
        self._follow_mode_and_overlay()

    def _subscribe_one(self, msg_type, topic: str, callback, qos: QoSProfile) -> None:
        self.subscriptions_by_topic[topic] = self.create_subscription(msg_type, topic, callback, qos)

    def _unsubscribe(self, topic: str) -> None:
        subscription = self.subscriptions_by_topic.pop(topic, None)
        if subscription is not None:
            self.destroy_subscription(subscription)

    def _follow_mode_and_overlay(self) -> None:
        """Executor: the small view shows the source that is not driving; the skeleton only when drawn."""
        with self.lock:
            mode, overlay_on, current = self.mode, self.overlay_on, self.other_topic
        wanted = {"digital": REAL_CAMERA_TOPIC, "real": DIGITAL_CAMERA_TOPIC}.get(mode, "")
        if wanted != current:
            self._unsubscribe(current)
            with self.lock:
                self.other, self.other_topic = LatestFrame(), wanted
            if wanted:
                self._subscribe_one(Image, wanted, lambda msg: self._on_frame(self.other, msg), CAMERA_QOS)
        has_skeleton = "/rynn/operator/skeleton_camera" in self.subscriptions_by_topic
        if overlay_on and not has_skeleton:
            self._subscribe_one(BimanualSkeleton, "/rynn/operator/skeleton_camera", self._on_skeleton, NEWEST)
        elif not overlay_on and has_skeleton:
            self._unsubscribe("/rynn/operator/skeleton_camera")
            with self.lock:
                self.skeleton = None

    # --- subscriptions: store only; the refresh timer does the work at the browser's rate -------

    def _on_frame(self, latest: LatestFrame, msg: Image) -> None:
        with self.lock:
            latest.msg, latest.fresh = msg, True
            latest.stats.add(time.monotonic(), seconds_from_time(msg.header.stamp))

    def _on_mode(self, msg: String) -> None:
        with self.lock:
            self.mode = msg.data
        self.page.mode_text.content = f"Mode: **{msg.data.upper()}**"
        self._follow_mode_and_overlay()

    def _on_measured(self, msg: JointState) -> None:
        with self.lock:
            self.measured = msg
            self.stream_stats["/joint_states"].add(time.monotonic(), seconds_from_time(msg.header.stamp))

    def _on_commanded(self, msg: JointState) -> None:
        with self.lock:
            self.commanded = msg

    def _on_tf(self, msg: TFMessage) -> None:
        poses = {}
        for t in msg.transforms:
            if t.header.frame_id != self.operator_frame:
                continue  # the robot's own TF tree shares /tf; the view draws the robot from its URDF
            p, q = t.transform.translation, t.transform.rotation
            poses[t.child_frame_id] = (np.array([p.x, p.y, p.z]), np.array([q.w, q.x, q.y, q.z]))
        with self.lock:
            self.trackers.update(poses)
            self.stream_stats["/tf"].add(time.monotonic())

    def _on_skeleton(self, msg: BimanualSkeleton) -> None:
        arrays = bimanual_skeleton_to_arrays(msg)
        with self.lock:
            self.skeleton = arrays

    def _on_status(self, msg: TeleopStatus) -> None:
        report = StatusReport(
            msg.source, seconds_from_time(msg.header.stamp), msg.outputs, msg.dropped_inputs, msg.rejected_inputs,
            tuple(StageTiming(s.stage, s.last, s.p50, s.p99) for s in msg.latencies), tuple(msg.faults),
        )
        with self.lock:
            self.health.on_status(report)
            self.stream_stats["/rynn/status"].add(time.monotonic(), report.stamp_s)

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        now = time.monotonic()
        with self.lock:
            for status in msg.status:
                report = DiagnosticReport(status.name, _level(status.level), status.message, status.hardware_id,
                                          {kv.key: kv.value for kv in status.values})
                self.health.on_diagnostic(report)
                if report.name == self.recorder:
                    self.recording.on_recorder_diagnostic(report, now)

    # --- the page, at the browser's rate --------------------------------------------------------

    def _refresh(self) -> None:
        now = time.monotonic()
        if self.camera_pacer.due(now):
            self._push_frame(self.camera, self.max_width, self.page.show_camera, draw_skeleton=True)
        if self.other_topic and self.other_pacer.due(now):
            self._push_frame(self.other, self.other_max_width, self.page.show_other_camera, draw_skeleton=False)
        if now >= self._next_scene:
            self._next_scene = now + SCENE_PERIOD_S
            self._push_scene()
        if now >= self._next_text:
            self._next_text = now + TEXT_PERIOD_S
            self._push_text(now)
        for name in self.pending.expired(now):
            self._answer(name, f"no answer after {self.service_timeout_s:.0f} s")

    def _push_frame(self, latest: LatestFrame, max_width: int, show, draw_skeleton: bool) -> None:
        with self.lock:
            msg, fresh, skeleton = latest.msg, latest.fresh, self.skeleton if self.overlay_on else None
            latest.fresh = False
        if msg is None or not fresh:
            return
        try:
            rgb = downscale(image_to_rgb(msg), max_width)
        except ValueError as error:  # wrong encoding or size: counted, said, skipped
            self.dropped += 1
            self.get_logger().warning(f"cannot show a frame: {error}", throttle_duration_sec=5.0)
            return
        if draw_skeleton and skeleton is not None:
            rgb = self.overlay.draw(rgb, skeleton["joints"], skeleton["valid"], skeleton["elbows"])
        show(rgb)

    def _push_scene(self) -> None:
        with self.lock:
            measured, commanded, trackers = self.measured, self.commanded, dict(self.trackers)
            self.measured = self.commanded = None
        poses = []
        for msg, poser in ((measured, self.measured_pose), (commanded, self.commanded_pose)):
            try:
                poses.append(None if msg is None else poser.update(msg.name, msg.position).copy())
            except ValueError as error:
                self.dropped += 1
                self.get_logger().warning(f"cannot pose the robot: {error}", throttle_duration_sec=5.0)
                poses.append(None)
        if poses[0] is not None or poses[1] is not None:
            self.page.show_robot(*poses)
        if trackers:
            self.page.show_trackers(trackers)

    def _push_text(self, now: float) -> None:
        now_ros = self.get_clock().now().nanoseconds / 1e9
        with self.lock:
            camera = self.camera.stats.reading(now, now_ros)
            other = self.other.stats.reading(now, now_ros)
            readings = {topic: stats.reading(now, now_ros) for topic, stats in self.stream_stats.items()}
            readings[IMAGE_TOPIC] = camera
            other_topic = self.other_topic
            loop = self.health.loop_rate_line()
            faults = self.health.faults()
            timings, counters = self.health.timings_markdown(), self.health.counters_markdown()
            recording = self.recording.summary_markdown(now)
        page = self.page
        page.camera_caption.content = _stream_caption(camera)
        page.other_camera.label = other_topic
        page.other_caption.content = _stream_caption(other) if other_topic else "waiting for the mode"
        page.show_banner(stale_banner(readings, self.required, now - self.watching_since))
        page.loop_rate.content = loop
        page.faults.content = ("**Faults**\n\n" + "\n".join(f"- {f}" for f in faults)) if faults else "No active faults."
        page.timings.content = timings
        page.counters.content = counters + (f"\n\nConsole dropped {self.dropped} bad frames/poses" if self.dropped else "")
        page.recording.content = recording

    # --- controls (web server thread): start an asynchronous call, answer in its callback -------

    def _request_mode(self, label: str) -> None:
        request = SetMode.Request(mode=SetMode.Request.MODE_DIGITAL if label == "digital" else SetMode.Request.MODE_REAL)
        self._call("mode", self.set_mode_client, request,
                   lambda r: describe_mode_answer(label.capitalize(), r.success, r.message))

    def _request_recorder(self, action: str, task: str) -> None:
        if action != "start":
            self._call("recorder", self.recorder_clients[action], Trigger.Request(),
                       lambda r: self._recorder_answered(action, r))
            return
        # The task first (the recorder reads its parameter at start), then start.
        parameter = Parameter(name="task", value=ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=task))
        self._call("recorder", self.task_client, SetParameters.Request(parameters=[parameter]), self._task_set)

    def _task_set(self, response: SetParameters.Response) -> str | None:
        result = response.results[0] if response.results else None
        if result is None or not result.successful:
            return f"task not set: {result.reason if result else 'empty answer'}"
        self.pending.finish("recorder")
        self._call("recorder", self.recorder_clients["start"], Trigger.Request(),
                   lambda r: self._recorder_answered("start", r))
        return None  # the start call answers

    def _recorder_answered(self, action: str, response: Trigger.Response) -> str:
        if action == "start" and response.success:
            with self.lock:
                self.recording.started(response.message, time.monotonic())
        return describe_recorder_answer(action, response.success, response.message)

    def _request_calibration(self) -> None:
        self._call("calibrate", self.calibrate_client, Trigger.Request(),
                   lambda r: ("calibrated: " if r.success else "calibration failed: ") + r.message)

    def _set_overlay(self, on: bool) -> None:
        with self.lock:
            self.overlay_on = on
        self.wake.trigger()

    def _call(self, name: str, client, request, describe) -> None:
        """One call per control in flight; the answer (or why there is none) goes on the page."""
        if not self.pending.begin(name, time.monotonic()):
            self._answer(name, "still waiting for the previous answer")
            return
        if not client.service_is_ready():
            self.pending.finish(name)
            self._answer(name, f"{client.srv_name} is not available (is its node running?)")
            return
        self._answer(name, "…")
        future = client.call_async(request)
        future.add_done_callback(lambda f: self._answered(name, f, describe))

    def _answered(self, name: str, future, describe) -> None:
        if not self.pending.busy(name):
            return  # given up on already (timeout)
        if future.exception() is not None:
            self.pending.finish(name)
            self._answer(name, f"call failed: {future.exception()}")
            return
        text = describe(future.result())
        if text is not None:
            self.pending.finish(name)
            self._answer(name, text)
            self.get_logger().info(f"{name}: {text}")

    def _answer(self, name: str, text: str) -> None:
        target = {"mode": self.page.mode_answer, "recorder": self.page.record_answer,
                  "calibrate": self.page.calibrate_answer}[name]
        target.content = text

    def destroy_node(self):
        """Stop serving before the node goes away (the web server's thread calls into it)."""
        self.page.stop()
        super().destroy_node()


def _level(level) -> int:
    """DiagnosticStatus.level is a ``byte`` field: rclpy gives it as a one-byte ``bytes``."""
    return level[0] if isinstance(level, bytes) else int(level)


def _stream_caption(reading) -> str:
    if reading.silent_s is None:
        return "no frames yet"
    return f"{reading.fps:.1f} FPS, frame age {reading.age_s * 1e3:.0f} ms, {reading.count} frames"


def main(args=None) -> None:
    # Two threads: rclpy's Python executor, which honours what the console does at run time
    # (guard conditions, subscriptions made and destroyed as browsers come and go, timers
    # cancelled); the node's one mutually exclusive callback group still runs its callbacks
    # one at a time. rclpy's EventsExecutor (threads=1) has no guard conditions and kept
    # delivering to a destroyed subscription and a cancelled timer here (rclpy Jazzy).
    run_node(OperatorConsoleNode, args, threads=2)


if __name__ == "__main__":
    main()
