"""Operator console node: the session in a browser (``http://127.0.0.1:8080`` by default).

Shows the canonical camera (``/camera/camera/color/image_raw``) large and the other source
small (the real camera while digital, the generated one while real), each with its measured
FPS and frame age, optionally with the operator skeleton (``/rynn/operator/skeleton_camera``)
drawn over it; a 3D view of the robot posed by ``/joint_states`` and, ghosted, by
``/rynn/command/joint_states``, with the operator trackers from ``/tf`` where they drive the robot
(the arms' IK targets, rynn_world.console.targets); the mode (latched
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
from rclpy.qos import QoSProfile
from rynn_teleop_msgs.msg import BimanualSkeleton, TeleopStatus
from rynn_teleop_msgs.srv import SetMode
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage

from rynn_common.cdr import deserialize
from rynn_common.clock_steps import create_steady_timer
from rynn_common.description import resolve_urdf_path
from rynn_common.node_runner import run_node
from rynn_common.node_settings import declare_settings
from rynn_common.qos import CAMERA_VIEW_QOS, LATCHED_QOS, LATEST_ONLY_QOS, REPORTS_QOS
from rynn_common.ros_conversions import seconds_from_time
from rynn_common.ros_names import (
    CAMERA_SKELETON_TOPIC,
    COMMAND_JOINT_STATES_TOPIC,
    DIAGNOSTICS_TOPIC,
    DIGITAL_IMAGE_TOPIC,
    IMAGE_TOPIC,
    JOINT_STATES_TOPIC,
    MODE_TOPIC,
    REAL_IMAGE_TOPIC,
    RECORDER_SERVICES,
    SET_MODE_SERVICE,
    STATUS_TOPIC,
    TF_TOPIC,
)
from rynn_common.skeleton_arrays import bimanual_skeleton_to_arrays
from rynn_robot_bridge.camera_messages import image_to_rgb
from rynn_robot_bridge.image_layout import read_image_header
from rynn_world.console.access import AccessGate, BrowserAccess, check_binding, read_token_file
from rynn_world.console.board import (
    LOOP_SOURCE,
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
from rynn_world.console.settings import ConsoleSettings
from rynn_world.console.streams import RequiredStream, Stage, StreamStats, stale_banner
from rynn_world.console.targets import TrackerTargets

NODE_NAME = "operator_console"
TEXT_PERIOD_S = 0.5  # captions, health and recording text
SCENE_PERIOD_S = 0.2  # the 3D view at 5 Hz: enough to follow the arms, and each update costs ~10 ms
OTHER_CAMERA_FPS = 5.0
BROWSER_CHECK_S = 0.5
JOINT_STATES_STALE_S = 1.0
STATUS_STALE_S = 3.0  # nodes report a few times a second
OPERATOR_STALE_S = 1.0  # the operator's /tf reaches DDS at 30 Hz
LOOP_OUTPUTS = f"{LOOP_SOURCE} outputs"  # the key of the retarget node's output counter among the readings


class LatestFrame:
    """The newest frame of a camera stream, still serialized (only the shown ones are decoded),
    and whether it was shown yet."""

    def __init__(self):
        self.raw: bytes | None = None
        self.fresh = False
        self.stats = StreamStats()


class OperatorConsoleNode(Node):
    def __init__(self):
        super().__init__(NODE_NAME)
        settings = declare_settings(self, ConsoleSettings, None)  # no file: the defaults, or `config_file`
        self.host = settings.host
        token = read_token_file(settings.access_token_file)
        check_binding(self.host, token)  # before anything listens
        self.access_gate = AccessGate(token)
        port = settings.port
        self.max_width = settings.max_width
        self.other_max_width = settings.other_max_width
        self.camera_pacer = FramePacer(settings.max_fps)
        self.other_pacer = FramePacer(OTHER_CAMERA_FPS)
        jpeg_quality = settings.jpeg_quality
        urdf_path = resolve_urdf_path(settings.urdf_path or None)
        self.recorder = settings.recorder_node.strip("/")
        calibrate_service = settings.calibrate_service
        self.camera_stale_s = settings.camera_stale_after_s
        self.service_timeout_s = settings.service_timeout_s
        self.overlay_on = settings.skeleton_overlay
        self.operator_frame = settings.operator_frame

        self.set_mode_client = self.create_client(SetMode, SET_MODE_SERVICE)
        self.recorder_clients = {a: self.create_client(Trigger, name) for a, name in RECORDER_SERVICES.items()}
        self.task_client = self.create_client(SetParameters, f"/{self.recorder}/set_parameters")
        self.calibrate_client = self.create_client(Trigger, calibrate_service)
        self.pending = PendingCalls(self.service_timeout_s)

        self.lock = threading.Lock()  # the web server's thread reads what the executor writes
        self.frames = {topic: LatestFrame() for topic in (IMAGE_TOPIC, REAL_IMAGE_TOPIC, DIGITAL_IMAGE_TOPIC)}
        self.mode = ""
        self.skeleton: dict[str, np.ndarray] | None = None
        self.measured: bytes | None = None  # newest serialized JointState, decoded at the 3D view's rate
        self.commanded: bytes | None = None
        self.trackers: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.stream_stats = {topic: StreamStats() for topic in (JOINT_STATES_TOPIC, STATUS_TOPIC, TF_TOPIC)}
        self.health = HealthBoard()
        self.recording = RecordingBoard()
        self.dropped = 0
        self.overlay = SkeletonOverlay()
        self.required = [
            RequiredStream(IMAGE_TOPIC, "canonical camera", self.camera_stale_s),
            RequiredStream(JOINT_STATES_TOPIC, "robot joint states", JOINT_STATES_STALE_S),
            RequiredStream(STATUS_TOPIC, "pipeline status", STATUS_STALE_S),
        ]

        self.clients_connected = 0
        self.watching_since = 0.0
        self.viewer: Node | None = None
        self.viewer_executor = None
        create_steady_timer(self, BROWSER_CHECK_S, self._follow_browsers)
        self._next_text = self._next_scene = 0.0

        actions = ConsoleActions(self._request_mode, self._request_recorder, self._request_calibration,
                                 self._set_overlay, self._on_clients,
                                 lambda event, control: self.access.allows(event, control))
        self.page = ConsolePage(self.host, port, urdf_path, actions, jpeg_quality, self.overlay_on, settings.robot_view)
        self.targets = TrackerTargets.from_retarget_config() if self.page.robot_view else None
        self.access = BrowserAccess(self.page.server, self.access_gate)
        self.measured_pose = JointPoser(self.page.joint_names)
        self.commanded_pose = JointPoser(self.page.joint_names)
        if port and self.page.port != port:
            self.get_logger().warning(f"port {port} is taken; serving on {self.page.port} instead")
        self.get_logger().info(f"operator console on http://{self.host}:{self.page.port}/ "
                               f"({'access token required, ' if token else ''}"
                               f"JPEG <= {self.camera_pacer.period ** -1:.0f} FPS, <= {self.max_width} px wide)")

    # --- browsers come and go ------------------------------------------------------------------

    def _on_clients(self, count: int) -> None:
        """Web server thread: note the count; the executor's browser check acts on it."""
        with self.lock:
            self.clients_connected = count

    def _follow_browsers(self) -> None:
        """Executor, twice a second: the viewer node (every subscription and the page refresh)
        exists exactly while a browser is connected; pending calls without an answer expire."""
        with self.lock:
            watching = self.clients_connected > 0
        if watching and self.viewer is None:
            self.watching_since = time.monotonic()
            self.viewer, self.viewer_executor = make_viewer(self), self.executor
            self.viewer_executor.add_node(self.viewer)
            self.get_logger().info("a browser connected: subscribed")
        elif not watching and self.viewer is not None:
            self._drop_viewer()
            with self.lock:
                self.frames = {topic: LatestFrame() for topic in self.frames}
                for stats in self.stream_stats.values():
                    stats.reset()
            self.get_logger().info("no browser connected: unsubscribed")
        for name in self.pending.expired(time.monotonic()):
            self._answer(name, f"no answer after {self.service_timeout_s:.0f} s")

    def _drop_viewer(self) -> None:
        viewer, self.viewer = self.viewer, None
        if viewer is not None:
            self.viewer_executor.remove_node(viewer)  # this node may already be out of it (shutdown)
            viewer.destroy_node()

    # --- subscriptions: store only; the refresh timer does the work at the browser's rate -------

    def _on_frame(self, latest: LatestFrame, raw: bytes) -> None:
        try:
            stamp_s = read_image_header(raw).stamp_ns / 1e9
        except ValueError as error:  # not an Image: counted, said, skipped
            self.dropped += 1
            self.get_logger().warning(f"cannot read a frame: {error}", throttle_duration_sec=5.0)
            return
        with self.lock:
            latest.raw, latest.fresh = raw, True
            latest.stats.add(time.monotonic(), stamp_s)

    def _on_mode(self, msg: String) -> None:
        with self.lock:
            self.mode = msg.data
        self.page.mode_text.content = f"Mode: **{msg.data.upper()}**"

    def _on_measured(self, raw: bytes) -> None:
        with self.lock:
            self.measured = raw
            self.stream_stats[JOINT_STATES_TOPIC].add(time.monotonic())

    def _on_commanded(self, raw: bytes) -> None:
        with self.lock:
            self.commanded = raw

    def _on_tf(self, msg: TFMessage) -> None:
        poses = {}
        for t in msg.transforms:
            if t.header.frame_id != self.operator_frame:
                continue  # the robot's own TF tree shares /tf; the view draws the robot from its URDF
            p, q = t.transform.translation, t.transform.rotation
            poses[t.child_frame_id] = (np.array([p.x, p.y, p.z]), np.array([q.w, q.x, q.y, q.z]))
        if not poses:
            return  # only the robot's transforms: not the operator stream
        with self.lock:
            self.trackers.update(poses)
            self.stream_stats[TF_TOPIC].add(time.monotonic())

    def _on_skeleton(self, msg: BimanualSkeleton) -> None:
        with self.lock:
            self.skeleton = msg

    def _on_status(self, msg: TeleopStatus) -> None:
        report = StatusReport(
            msg.source, seconds_from_time(msg.header.stamp), msg.outputs, msg.dropped_inputs, msg.rejected_inputs,
            tuple(StageTiming(s.stage, s.last, s.p50, s.p99) for s in msg.latencies), tuple(msg.faults),
        )
        with self.lock:
            self.health.on_status(report)
            self.stream_stats[STATUS_TOPIC].add(time.monotonic(), report.stamp_s)

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

    def camera_chain(self, mode: str) -> tuple[Stage, ...]:
        """The stages that feed the canonical camera in ``mode``, the operator first: a stale camera
        banner names the first of them that stopped."""
        trackers = Stage("operator trackers", TF_TOPIC, OPERATOR_STALE_S)
        actions = Stage("retarget", LOOP_OUTPUTS, STATUS_STALE_S)
        relay = Stage("bridge camera relay", IMAGE_TOPIC, self.camera_stale_s)
        if mode == "digital":
            return trackers, actions, Stage("world model", DIGITAL_IMAGE_TOPIC, self.camera_stale_s), relay
        if mode == "real":
            return (trackers, actions, Stage("robot", JOINT_STATES_TOPIC, JOINT_STATES_STALE_S),
                    Stage("robot camera", REAL_IMAGE_TOPIC, self.camera_stale_s), relay)
        return ()

    def other_topic(self) -> str:
        """The source that is not driving the canonical topics (none before the mode is known)."""
        return {"digital": REAL_IMAGE_TOPIC, "real": DIGITAL_IMAGE_TOPIC}.get(self.mode, "")

    def _refresh(self) -> None:
        now = time.monotonic()
        if self.camera_pacer.due(now):
            self._push_frame(IMAGE_TOPIC, self.max_width, self.page.show_camera, draw_skeleton=True)
        other = self.other_topic()
        if other and self.other_pacer.due(now):
            self._push_frame(other, self.other_max_width, self.page.show_other_camera, draw_skeleton=False)
        if self.page.robot_view and now >= self._next_scene:
            self._next_scene = now + SCENE_PERIOD_S
            self._push_scene()
        if now >= self._next_text:
            self._next_text = now + TEXT_PERIOD_S
            self._push_text(now)

    def _push_frame(self, topic: str, max_width: int, show, draw_skeleton: bool) -> None:
        with self.lock:
            latest = self.frames[topic]
            raw, fresh, skeleton = latest.raw, latest.fresh, self.skeleton if self.overlay_on else None
            latest.fresh = False
        if raw is None or not fresh:
            return
        try:
            rgb = downscale(image_to_rgb(deserialize(raw, Image)), max_width)
        except ValueError as error:  # wrong encoding or size: counted, said, skipped
            self.dropped += 1
            self.get_logger().warning(f"cannot show a frame: {error}", throttle_duration_sec=5.0)
            return
        if draw_skeleton and skeleton is not None:
            arrays = bimanual_skeleton_to_arrays(skeleton)
            rgb = self.overlay.draw(rgb, arrays["joints"], arrays["valid"], arrays["elbows"])
        show(rgb)

    def _push_scene(self) -> None:
        with self.lock:
            measured, commanded, trackers = self.measured, self.commanded, dict(self.trackers)
            self.measured = self.commanded = None
        poses = []
        for raw, poser in ((measured, self.measured_pose), (commanded, self.commanded_pose)):
            try:
                msg = None if raw is None else deserialize(raw, JointState)
                poses.append(None if msg is None else poser.update(msg.name, msg.position).copy())
            except ValueError as error:
                self.dropped += 1
                self.get_logger().warning(f"cannot pose the robot: {error}", throttle_duration_sec=5.0)
                poses.append(None)
        if poses[0] is not None or poses[1] is not None:
            self.page.show_robot(*poses)
        if trackers and self.targets is not None:
            self.page.show_targets(self.targets.targets(trackers))

    def _push_text(self, now: float) -> None:
        now_ros = self.get_clock().now().nanoseconds / 1e9
        with self.lock:
            other_topic = self.other_topic()
            camera = self.frames[IMAGE_TOPIC].stats.reading(now, now_ros)
            other = self.frames[other_topic].stats.reading(now, now_ros) if other_topic else None
            readings = {topic: stats.reading(now, now_ros) for topic, stats in self.stream_stats.items()}
            readings.update({topic: frame.stats.reading(now, now_ros) for topic, frame in self.frames.items()})
            loop_outputs = self.health.outputs_reading(LOOP_SOURCE, now_ros)
            if loop_outputs is not None:
                readings[LOOP_OUTPUTS] = loop_outputs
            chains = {IMAGE_TOPIC: self.camera_chain(self.mode)}
            loop = self.health.loop_rate_line()
            faults = self.health.faults()
            timings, counters = self.health.timings_markdown(), self.health.counters_markdown()
            recording = self.recording.summary_markdown(now)
        page = self.page
        page.camera_caption.content = _stream_caption(camera)
        page.other_camera.label = other_topic
        page.other_caption.content = _stream_caption(other) if other_topic else "waiting for the mode"
        page.show_banner(stale_banner(readings, self.required, now - self.watching_since, chains))
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
        self._call("calibrate", self.calibrate_client, Trigger.Request(), self._calibrated)

    def _calibrated(self, response: Trigger.Response) -> str:
        """The retarget node calibrated on its newest trackers: the 3D view's targets follow, on ours."""
        if response.success and self.targets is not None:
            with self.lock:
                trackers = dict(self.trackers)
            self.targets.calibrate(trackers)
        return ("calibrated: " if response.success else "calibration failed: ") + response.message

    def _set_overlay(self, on: bool) -> None:
        with self.lock:
            self.overlay_on = on

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
        self._drop_viewer()
        super().destroy_node()


def make_viewer(console: OperatorConsoleNode) -> Node:
    """The console's subscriptions and page refresh, as a node of their own: made when the first
    browser connects, removed from the executor and destroyed when the last one leaves.

    A separate node so that this works on either executor the shared node runner may use:
    rclpy's C++ EventsExecutor kept serving a destroyed subscription and a cancelled timer of a
    node it spins (Jazzy, tried here), but stops all of a removed node's. It takes no
    command-line arguments: the launcher's ``__node:=`` would rename it.
    """
    viewer = Node(f"{console.get_name()}_viewer", namespace=console.get_namespace(), context=console.context,
                  use_global_arguments=False, start_parameter_services=False)

    def subscribe(msg_type, topic: str, callback, qos: QoSProfile, raw: bool = False) -> None:
        """``raw``: the callback gets the CDR bytes; high-rate and large streams are decoded only
        when the page shows them (5-15 times a second), not at their publishing rate."""
        viewer.create_subscription(msg_type, topic, callback, qos, raw=raw)

    for topic in console.frames:  # the other source is chosen by the mode when shown
        subscribe(Image, topic, lambda raw, t=topic: console._on_frame(console.frames[t], raw), CAMERA_VIEW_QOS, raw=True)
    subscribe(String, MODE_TOPIC, console._on_mode, LATCHED_QOS)
    subscribe(JointState, JOINT_STATES_TOPIC, console._on_measured, LATEST_ONLY_QOS, raw=True)
    subscribe(JointState, COMMAND_JOINT_STATES_TOPIC, console._on_commanded, LATEST_ONLY_QOS, raw=True)
    subscribe(BimanualSkeleton, CAMERA_SKELETON_TOPIC, console._on_skeleton, LATEST_ONLY_QOS)
    subscribe(TFMessage, TF_TOPIC, console._on_tf, REPORTS_QOS)
    subscribe(TeleopStatus, STATUS_TOPIC, console._on_status, REPORTS_QOS)
    subscribe(DiagnosticArray, DIAGNOSTICS_TOPIC, console._on_diagnostics, REPORTS_QOS)
    create_steady_timer(viewer, console.camera_pacer.period, console._refresh)
    return viewer


def _level(level) -> int:
    """DiagnosticStatus.level is a ``byte`` field: rclpy gives it as a one-byte ``bytes``."""
    return level[0] if isinstance(level, bytes) else int(level)


def _stream_caption(reading) -> str:
    if reading.silent_s is None:
        return "no frames yet"
    return f"{reading.fps:.1f} FPS, frame age {reading.age_s * 1e3:.0f} ms, {reading.count} frames"


def main(args=None) -> None:
    run_node(OperatorConsoleNode, args)


if __name__ == "__main__":
    main()
