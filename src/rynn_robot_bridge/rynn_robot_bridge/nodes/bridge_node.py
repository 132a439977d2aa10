"""The real/digital robot bridge: one set of canonical topics, whichever robot runs.

Topics (names are parameters: every key of this package's config/bridge.yaml is one, and robot.yaml's
``lcm`` section as ``lcm.url``, ``lcm.command_channel``, ...; an explicit parameter wins over the file):

* in:  ``/rynn/action`` (RobotAction, best effort so any publisher matches; the newest valid one
  wins, every one is counted: rejected, superseded or lost in transport); the real
  camera on ``/rynn/real/camera/color/{image_raw,camera_info}`` (the launch remaps the
  RealSense or simulated robot there) and the world model on
  ``/rynn/digital/camera/color/{image_raw,camera_info}``, both subscribed RELIABLE (a
  best-effort subscription lost ~40% of the 640x480 frames here, so a best-effort camera
  publisher is reported as a status fault instead); robot state on LCM.
* out: ``/camera/camera/color/{image_raw,camera_info}`` (RELIABLE, volatile, depth 2:
  reliable and best-effort subscribers both match), ``/joint_states``,
  ``/rynn/mode`` (std_msgs/String "real"/"digital", RELIABLE + TRANSIENT_LOCAL, depth 1,
  so late joiners and recorders see the current mode), ``/rynn/status``
  (TeleopStatus), ``/diagnostics``; robot commands on LCM at 200 Hz.
* service: ``/rynn/set_mode`` (SetMode); a refused or invalid request answers success=false
  with the reason.

Routing: the bridge relays frames from the private topics of the active source
(a relay rather than remapping plus gating, because only a relay can guarantee
that no frame of the old source appears after the switch response; its cost is
measured by benchmarks/bench_bridge.py). Frames are passed through untouched:
a stalled source makes the canonical topic go quiet and raises a status fault.

Contract with the world-model node (real -> digital continues from the current
scene): it subscribes to ``/rynn/mode`` (transient local) and to the real camera's
private topic, keeps the newest real frame, and takes it as its reference when
the mode becomes "digital". The bridge publishes the new mode before it answers
the SetMode request, after it has stopped forwarding the real camera.
"""

from __future__ import annotations

import threading
import time

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rynn_teleop_msgs.msg import RobotAction, TeleopStatus
from rynn_teleop_msgs.srv import SetMode
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import String

from rynn_common.action_layout import joint_names
from rynn_common.cdr import deserialize
from rynn_common.cdr_layout import JointStateLayout, robot_action_positions
from rynn_common.clock_steps import create_steady_timer
from rynn_common.config_paths import find_config
from rynn_common.node_runner import run_node
from rynn_common.node_settings import declare_settings
from rynn_common.pipeline_stats import PipelineStats
from rynn_common.polled_input import take_message
from rynn_common.qos import ACTION_INPUT_QOS, LATCHED_QOS, LIVE_QOS, RECORDED_CAMERA_QOS, RECORDED_STREAM_QOS, RELAY_IMAGE_QOS, STATUS_QOS
from rynn_common.rate_gate import RateGate
from rynn_common.ros_conversions import make_diagnostics, make_teleop_status
from rynn_common.ros_names import ACTION_TOPIC, DIAGNOSTICS_TOPIC, JOINT_STATES_TOPIC, MODE_TOPIC, SET_MODE_SERVICE, STATUS_TOPIC
from rynn_robot_bridge.bridge.camera_router import CameraRouter, FrameFormat, Routed
from rynn_robot_bridge.bridge.commander import RobotCommander
from rynn_robot_bridge.bridge.counters import mirror_bridge_counters
from rynn_robot_bridge.bridge.lcm_link import LcmRobotLink, receive_buffer_note, state_batch_interval_s, with_receive_buffer
from rynn_robot_bridge.bridge.mode import Mode
from rynn_robot_bridge.bridge.rate_loop import FixedRateThread, set_thread_scheduling
from rynn_robot_bridge.bridge.settings import BridgeSettings
from rynn_robot_bridge.config import LcmSettings
from rynn_robot_bridge.image_layout import read_image_header
from rynn_robot_bridge.lcm_protocol import RobotState

NODE_NAME = "rynn_bridge"


class BridgeNode(Node):
    def __init__(self):
        super().__init__(NODE_NAME)
        settings, lcm_settings = self._declare_parameters()
        start_mode = Mode.parse(settings.start_mode)
        self._digital_state_batch_s = state_batch_interval_s(settings.digital_state_batch_ms)
        now = time.monotonic()
        self.stats = PipelineStats()
        self._stats_lock = threading.Lock()
        self._switch_lock = threading.Lock()  # a command cycle and a mode switch never interleave
        self.commander = RobotCommander.from_settings(start_mode, settings, lcm_settings.command_rate_hz)
        canonical = FrameFormat(settings.camera_encoding, settings.camera_width, settings.camera_height, settings.camera_frame_id)
        self.router = CameraRouter(start_mode, canonical, settings.camera_stall_timeout_ms / 1e3, now,
                                   max_future_s=settings.camera_max_future_ms / 1e3)
        self._joint_names = joint_names()
        self._joint_state_layouts: dict[tuple[int, int, int], JointStateLayout] = {}  # by array lengths
        self._joint_state_lock = threading.Lock()
        self._joint_state_gate = RateGate(1.0 / settings.joint_state_rate_hz, now)
        self._last_cycle_at: float | None = None
        self._reported_faults: set[str] = set()
        self._frames_forwarded = 0
        self._incompatible_sources: dict[str, str] = {}

        self.image_pub = self.create_publisher(Image, settings.image_topic, RECORDED_CAMERA_QOS)
        self.info_pub = self.create_publisher(CameraInfo, settings.camera_info_topic, RECORDED_CAMERA_QOS)
        self.joint_state_pub = self.create_publisher(JointState, JOINT_STATES_TOPIC, RECORDED_STREAM_QOS)
        self.mode_pub = self.create_publisher(String, MODE_TOPIC, LATCHED_QOS)
        self.status_pub = self.create_publisher(TeleopStatus, STATUS_TOPIC, STATUS_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, LIVE_QOS)
        for source, image_topic, info_topic in (
            (Mode.REAL, settings.real_image_topic, settings.real_camera_info_topic),
            (Mode.DIGITAL, settings.digital_image_topic, settings.digital_camera_info_topic),
        ):
            incompatible = SubscriptionEventCallbacks(incompatible_qos=lambda event, t=image_topic: self._incompatible_source(t, event))
            # raw: frames are relayed as the bytes received (no 900 kB deserialize + re-serialize per frame)
            self.create_subscription(Image, image_topic, lambda raw, s=source: self._relay_image(s, raw), RELAY_IMAGE_QOS,
                                     event_callbacks=incompatible, raw=True)
            self.create_subscription(CameraInfo, info_topic, lambda raw, s=source: self._relay_info(s, raw), RELAY_IMAGE_QOS,
                                     raw=True)
        # raw: bytes no RobotAction serializes to are counted (a typed subscription drops them unseen)
        self._action_subscription = self.create_subscription(
            RobotAction, ACTION_TOPIC, self._on_action_bytes, ACTION_INPUT_QOS, raw=True,
            event_callbacks=SubscriptionEventCallbacks(message_lost=self._on_actions_lost))
        self.create_service(SetMode, SET_MODE_SERVICE, self._on_set_mode)
        create_steady_timer(self, 1.0 / settings.status_rate_hz, self._publish_status)

        self.link = LcmRobotLink(with_receive_buffer(lcm_settings.url, settings.lcm_receive_buffer_bytes),
                                 lcm_settings.command_channel, lcm_settings.state_channel, self._on_robot_state)
        self.command_loop = FixedRateThread(lcm_settings.command_rate_hz, self._command_cycle, name="lcm_commands",
                                            on_error=self._on_command_cycle_error,
                                            realtime_priority=settings.command_realtime_priority)
        self._command_loop_stall_s = settings.command_loop_stall_ms / 1e3
        self.get_logger().info(receive_buffer_note(self.link.url))
        self._publish_mode(start_mode)
        self.link.start()
        self.command_loop.start()
        # The executor's thread is the one creating this node (rynn_common.node_runner); scheduled after the
        # threads above start, so that none of them inherits it.
        self._threads_priority = settings.threads_realtime_priority
        self._mode_scheduled_threads = {"LCM state": self.link.native_id, "executor": threading.get_native_id()}
        self.thread_scheduling: dict[str, str] = {}
        self._schedule_threads(start_mode)
        self.get_logger().info(
            f"bridge up in {start_mode.label} mode; LCM {lcm_settings.url} "
            f"(commands {lcm_settings.command_channel} at {lcm_settings.command_rate_hz:g} Hz, "
            f"thread {self.command_loop.scheduling}; state {lcm_settings.state_channel}; "
            f"threads in {start_mode.label} mode: {', '.join(f'{n} {s}' for n, s in self.thread_scheduling.items())}; "
            f"robot states taken each as it comes in real mode, in {settings.digital_state_batch_ms:g} ms batches "
            "in digital mode)"
        )
        if self.command_loop.scheduling.startswith("normal:"):
            self.get_logger().warning(f"command thread: {self.command_loop.scheduling}")

    def _declare_parameters(self) -> tuple[BridgeSettings, LcmSettings]:
        """bridge.yaml's keys as parameters (``config_file``), and robot.yaml's ``lcm`` section as
        ``lcm.*`` (``robot_config``): the robot link's channels are shared with the robot."""
        settings = declare_settings(self, BridgeSettings, find_config("rynn_robot_bridge", "bridge.yaml"))
        lcm = declare_settings(self, LcmSettings, find_config("rynn_robot_bridge", "robot.yaml"),
                               file_parameter="robot_config", section="lcm")
        return settings, lcm

    # --- robot side -------------------------------------------------------------------------

    def _on_robot_state(self, state: RobotState, received_at: float) -> None:
        """LCM thread: a validated state feeds the commander and, in real mode, /joint_states (rate-limited).
        A rejected one is only counted: the status fault (logged when it appears) says why, with the counts,
        so a flood of bad states costs no per-packet logging."""
        accepted = not self.commander.update_measured(state, received_at)
        if accepted and self.commander.mode == Mode.REAL and self._joint_state_gate.due(received_at):
            self._publish_joint_state(state.position, state.velocity, state.effort)

    def _command_cycle(self, now: float) -> bool:
        """Command thread: one 200 Hz cycle; in digital mode the virtual state is /joint_states (rate-limited).
        Returns whether it commanded the robot: only then is the next period's command owed (a deadline)."""
        with self._switch_lock:
            command = self.commander.cycle(now)
            if command is not None:
                self.link.send(command)
        if self.commander.mode == Mode.DIGITAL and self._joint_state_gate.due(now):
            virtual = self.commander.virtual_state()
            if virtual is not None:
                self._publish_joint_state(*virtual)
        with self._stats_lock:
            if self._last_cycle_at is not None:
                self.stats.record("command_period", now - self._last_cycle_at)
            self._last_cycle_at = now
        return command is not None

    def _on_command_cycle_error(self, error: Exception) -> None:
        """Command thread: a cycle raised. Log it, hold the robot at the last good pose; the loop runs on
        and the status reports the fault (FixedRateThread.problem)."""
        self.get_logger().error(f"command cycle failed, holding the robot: {error!r}", throttle_duration_sec=1.0)
        with self._switch_lock:
            hold = self.commander.hold_command()
            if hold is not None:
                self.link.send(hold)

    def _on_action_bytes(self, raw: bytes) -> None:
        """Executor: this action and every one queued behind it, taken at once (an empty take costs ~1 us): the
        newest valid one is submitted, each bad one rejected and each valid older one counted as superseded, so
        every action received is accounted for, none replaced in the reader's queue unseen."""
        received = [raw]
        while len(received) < ACTION_INPUT_QOS.depth and (queued := self._take_queued_action()) is not None:
            received.append(queued)
        actions, malformed = [], 0
        for message in received:
            positions = robot_action_positions(message)  # the usual bytes, read without building a message
            if positions is None:
                try:
                    positions = deserialize(message, RobotAction).positions
                except ValueError as error:
                    malformed += 1
                    self.get_logger().warning(str(error), throttle_duration_sec=5.0)
                    continue
            actions.append(positions)
        intake = self.commander.submit_actions(actions, time.monotonic())
        if malformed or intake.rejected or intake.superseded:
            with self._stats_lock:
                if malformed:
                    self.stats.reject("action_malformed", malformed)
                for reason in intake.rejected:
                    self.stats.reject(f"action_{reason}")
                if intake.superseded:
                    self.stats.drop("action_superseded", intake.superseded)

    def _take_queued_action(self) -> bytes | None:
        taken = take_message(self._action_subscription)  # raw: the CDR bytes
        return None if taken is None else taken[0]

    def _on_actions_lost(self, status) -> None:
        """Actions DDS knows never reached the reader (a best-effort sample lost on the way)."""
        with self._stats_lock:
            self.stats.drop("action_lost_in_transport", status.total_count_change)

    def _publish_joint_state(self, position, velocity, effort=()) -> None:
        """Published as soon as the state exists (never from a cache), so every message is a new state; as the
        bytes rclpy would serialise from the message, without building one (rynn_common.cdr_layout)."""
        counts = (len(position), len(velocity), len(effort))
        with self._joint_state_lock:  # the LCM thread (real) and the command thread (digital) around a switch
            layout = self._joint_state_layouts.get(counts)
            if layout is None:
                layout = self._joint_state_layouts[counts] = JointStateLayout(self._joint_names, counts)
            self.joint_state_pub.publish(layout.pack(self.get_clock().now().nanoseconds, position, velocity, effort))

    # --- camera -----------------------------------------------------------------------------

    def _relay_image(self, source: Mode, raw: bytes) -> None:
        """Check the frame's header (read from its CDR bytes) and publish those same bytes if routed."""
        started = time.perf_counter()
        try:
            image = read_image_header(raw)
        except ValueError as error:
            with self._stats_lock:
                self.stats.reject(f"{source.label}_camera_malformed")
            self.get_logger().warning(f"{source.label} camera message unreadable: {error}", throttle_duration_sec=5.0)
            return
        routed = self.router.offer_image(source, image, time.monotonic(), self.get_clock().now().nanoseconds,
                                         lambda: self.image_pub.publish(raw))
        with self._stats_lock:
            if routed is Routed.FORWARDED:
                self._frames_forwarded += 1
                self.stats.record("camera_relay", time.perf_counter() - started)
            elif routed is not Routed.INACTIVE_SOURCE:
                self.stats.reject(f"{source.label}_camera_{routed.value}")
        if routed not in (Routed.FORWARDED, Routed.INACTIVE_SOURCE):
            self.get_logger().warning(
                f"{source.label} camera frame rejected ({routed.value}): {image} vs canonical {self.router.canonical}",
                throttle_duration_sec=5.0,
            )

    def _relay_info(self, source: Mode, raw: bytes) -> None:
        try:
            deserialize(raw, CameraInfo)  # ~0.1 ms at 30 Hz: never relay bytes no CameraInfo serializes to
        except ValueError as error:
            with self._stats_lock:
                self.stats.reject(f"{source.label}_camera_info_malformed")
            self.get_logger().warning(f"{source.label} camera info unreadable: {error}", throttle_duration_sec=5.0)
            return
        self.router.offer_info(source, lambda: self.info_pub.publish(raw))

    def _incompatible_source(self, topic: str, event) -> None:
        self._incompatible_sources[f"qos {topic}"] = (
            f"a publisher on {topic} offers incompatible QoS ({str(event.last_policy_kind).rsplit('POLICY_', 1)[-1]}); "
            "camera sources must publish RELIABLE"
        )

    # --- mode and status --------------------------------------------------------------------

    def _on_set_mode(self, request: SetMode.Request, response: SetMode.Response) -> SetMode.Response:
        response.previous_mode = int(self.commander.mode)
        try:
            mode = Mode.parse(int(request.mode))
        except ValueError as exc:
            response.success, response.message = False, str(exc)
            self.get_logger().error(f"SetMode refused: {exc}")
            return response
        now = time.monotonic()
        with self._switch_lock:
            accepted, message = self.commander.request_mode(mode, now)
            if accepted:
                self.router.switch(mode, now)
                self._publish_mode(mode)
                self._schedule_threads(mode)
        response.success, response.message = accepted, message
        # Two call sites on purpose: rclpy refuses a second severity at one logging call site.
        if accepted:
            self.get_logger().info(f"SetMode {mode.label}: {message}")
        else:
            self.get_logger().warning(f"SetMode {mode.label}: {message}")
        return response

    def _publish_mode(self, mode: Mode) -> None:
        self.mode_pub.publish(String(data=mode.label))

    def _schedule_threads(self, mode: Mode) -> None:
        """Real mode: the LCM state and executor threads at SCHED_FIFO (``threads_realtime_priority``), so none
        holding the interpreter lock the command thread waits for is preempted by the rest of the graph; digital
        mode commands nothing and they stay normal, leaving the CPU to the world model, and the 500 Hz robot
        states, which there only keep the real robot's pose current for the switch back, are taken in batches
        (``digital_state_batch_ms``: one wake-up of the LCM thread a batch, 2-3 % of a core less)."""
        self.link.batch_interval_s = self._digital_state_batch_s if mode == Mode.DIGITAL else 0.0
        priority = self._threads_priority if mode == Mode.REAL else 0
        self.thread_scheduling = {name: set_thread_scheduling(native_id, priority)
                                  for name, native_id in self._mode_scheduled_threads.items()}
        refused = [f"{name} thread: {scheduling}" for name, scheduling in self.thread_scheduling.items()
                   if scheduling.startswith("normal:")]
        if refused:
            self.get_logger().warning("; ".join(refused))

    def _publish_status(self) -> None:
        now = time.monotonic()
        faults = self.commander.faults(now) | self._incompatible_sources
        loop_problem = self.command_loop.problem(now, self._command_loop_stall_s)
        if loop_problem:
            faults["command_loop"] = loop_problem
        stall = self.router.stall(now)
        if stall:
            faults["camera"] = stall
        for key in faults.keys() - self._reported_faults:
            self.get_logger().warning(f"fault: {faults[key]}")
        for key in self._reported_faults - faults.keys():
            self.get_logger().info(f"fault cleared: {key}")
        self._reported_faults = set(faults)
        stamp = self.get_clock().now().to_msg()
        with self._stats_lock:
            self.stats.replace_faults(faults)
            mirror_bridge_counters(self.stats, self.commander, self.command_loop, self.link, self._frames_forwarded)
            status = make_teleop_status(self.stats, NODE_NAME, int(self.commander.mode), stamp)
            diagnostics = make_diagnostics(self.stats, NODE_NAME, self.link.url, stamp)
        self.status_pub.publish(status)
        self.diagnostics_pub.publish(diagnostics)

    def destroy_node(self):
        """Stop the LCM and command threads (they publish) before the node goes away."""
        self.command_loop.stop()
        self.link.stop()
        super().destroy_node()


def main(args=None) -> None:
    run_node(BridgeNode, args)


if __name__ == "__main__":
    main()
