"""Retarget node: operator trackers (/tf) + gloves -> 54-D robot action at 200 Hz.

The newest tracker sample runs the ROS-free ``RetargetPipeline`` (input guard,
paper DLS IK with the shoulder prior, hand retargeting) on a worker thread, at
most ``max_solve_rate_hz`` times a second, and retargets the smoother; a sample
superseded before the worker got to it is
dropped and counted, so latency never grows with a backlog. A dedicated 200 Hz
loop (not an executor timer, for low jitter) publishes the Ruckig-smoothed
command even when trackers arrive at 100-120 Hz or stall. Composed with the tracker and glove
nodes in one process (the graph's operator container), every one of their samples reaches
``on_trackers_sample`` and ``on_hands_sample`` in-process, on their feed threads: no message built,
serialised or deserialised for it (rynn_common.local_delivery; DDS gets <= 30 a second). Such a sample is a
callable giving the fields its message would carry, called only for the samples the worker takes (at most
``max_solve_rate_hz`` of the feeds' 120 a second): a superseded one costs a reference swap.

Publishes
- ``/rynn/action`` (RobotAction, frame base_link), 200 Hz; ``sequence`` numbers the control periods: a
  period the starved loop skipped (counted, ``dropped.skipped_output_period``) is a gap, and the next
  command is where the smoother is by then (its limits are in seconds, not in messages)
- ``/rynn/command/joint_states`` (JointState of the same command, at most ``command_state_rate_hz``, 50;
  the bridge owns /joint_states)
- ``/rynn/operator/skeleton_camera`` (BimanualSkeleton in camera_color_optical_frame, stamped
  with the tracker sample; elbows = the commanded robot elbows), for the world model
- ``/rynn/status`` (TeleopStatus) and ``/diagnostics``
Service ``~/calibrate`` (std_srvs/Trigger): the current operator pose becomes the neutral
pose (T_base/T_ee); saved to ``calibration_file`` when that is set (and loaded from it at start).

Settings: this package's config/retarget.yaml (``config_file`` replaces it), every flat key a
parameter of the same dotted name (``arm_ik.scale``, ``frames.world``, ``max_solve_rate_hz``);
an explicit parameter wins over the file (rynn_common.node_settings).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rynn_teleop_msgs.msg import BimanualSkeleton, RobotAction, TeleopStatus
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage

from rynn_common.action_layout import joint_names, validate_action
from rynn_common.cdr_layout import BimanualSkeletonLayout, JointStateLayout, RobotActionLayout
from rynn_common.clock_steps import create_steady_timer
from rynn_common.config_paths import find_config
from rynn_common.local_delivery import LocalSubscription
from rynn_common.node_runner import run_node
from rynn_common.node_settings import declare_settings
from rynn_common.pipeline_stats import PipelineStats
from rynn_common.qos import LIVE_QOS, RECORDED_STREAM_QOS, STATUS_QOS, TF_QOS
from rynn_common.ros_conversions import (
    bimanual_skeleton_bytes,
    make_diagnostics,
    make_teleop_status,
    seconds_from_time,
    stamp_ns_from_seconds,
)
from rynn_common.ros_names import (
    ACTION_TOPIC,
    BASE_FRAME,
    CAMERA_SKELETON_TOPIC,
    COMMAND_JOINT_STATES_TOPIC,
    DIAGNOSTICS_TOPIC,
    STATUS_TOPIC,
    TF_TOPIC,
)
from rynn_common.skeleton_arrays import bimanual_skeleton_to_arrays
from rynn_retarget.config import RetargetNodeSettings
from rynn_retarget.input_guard import StampBound
from rynn_retarget.kinematics.calibration import save_calibration
from rynn_retarget.kinematics.transforms import pose_matrix
from rynn_retarget.operator.frame import TRACKER_NAMES, HandSkeleton, HandsSample, OperatorFrame, TrackerTransform
from rynn_retarget.pipeline import RetargetPipeline
from rynn_retarget.smoothing import OutputSchedule

SIDES = ("left", "right")
# Guard counters that mean "not used" rather than "invalid" (TeleopStatus.dropped_inputs).
GUARD_DROPS = {"out_of_order", "missing_tracker", "hand_lost", "stale"}
# A tick late by less than this is caught up (rate kept); beyond it the whole periods missed are skipped, counted
# (dropped.skipped_output_period) and covered by the next command: published + skipped = rate x time, and the
# command moves as fast in time, whatever the load (rynn_retarget.smoothing.OutputSchedule).
MAX_CATCH_UP_S = 0.02
# The 200 Hz thread must get the GIL back quickly from the retarget worker (default 5 ms).
GIL_SWITCH_INTERVAL_S = 0.0005


class RetargetNode(Node):
    def __init__(self, **node_options):
        super().__init__("retarget_node", **node_options)
        settings = declare_settings(self, RetargetNodeSettings, find_config("rynn_retarget", "retarget.yaml"))
        self.calibration_file = settings.calibration_file
        self.hands_timeout = settings.hands_timeout_s
        self.solve_interval = 1.0 / settings.max_solve_rate_hz if settings.max_solve_rate_hz > 0 else 0.0
        rate = settings.command_state_rate_hz
        self.command_state_interval = 1.0 / rate if rate > 0 else 0.0
        self.world_frame = settings.frames.world
        self.tracker_by_frame = {getattr(settings.frames, n): n for n in TRACKER_NAMES}

        self.pipeline = RetargetPipeline(settings)
        self.smoother = self.pipeline.make_smoother()
        self.camera_frame = self.pipeline.config.camera_frame
        self.names = joint_names()
        self.stats = PipelineStats()
        self.lock = threading.Lock()  # the pipeline (worker, calibration)
        self.smoother_lock = threading.Lock()  # held only for microseconds: the 200 Hz loop waits on it
        self.last_accepted = float("-inf")  # monotonic time of the last retargeted sample
        self.stale_after = self.pipeline.config.guard.stale_after_s
        self.hands: dict | None = None  # latest glove sample as arrays + receive time
        self.deferred_hands: tuple[Callable[[], HandsSample], float] | None = None  # in-process, not yet converted
        self.hands_lock = threading.Lock()  # deferred_hands: the glove's feed thread and the worker
        self.last_frame: OperatorFrame | None = None
        # Each input stream's stamps: advancing, and bounded against this node's clock (never latch).
        self.tf_stamps = StampBound(self.pipeline.config.guard.max_future_s)
        self.hands_stamps = StampBound(self.pipeline.config.guard.max_future_s)
        self.stamp_loggers = {stream: self.get_logger().get_child(stream) for stream in ("tf", "hands")}  # own throttles
        # on_tf/on_hands run on the executor thread and, composed, on the tracker/glove feed threads too
        self.stamps_lock = threading.Lock()
        # newest tracker sample not yet retargeted: with the tf order it was accepted in (tf_stamps.restarts), or
        # an in-process sample not yet converted (tracker_frame makes the first of the second)
        self.pending: tuple[OperatorFrame, int] | Callable[[], list[TrackerTransform]] | None = None
        self.guard_order = 0  # the tf order the pipeline's guard is in
        self.pending_ready = threading.Condition()

        self.action_pub = self.create_publisher(RobotAction, ACTION_TOPIC, RECORDED_STREAM_QOS)
        self.command_pub = self.create_publisher(JointState, COMMAND_JOINT_STATES_TOPIC, LIVE_QOS)
        self.action_bytes = RobotActionLayout(BASE_FRAME)  # only the 200 Hz thread packs them
        self.command_state_bytes = JointStateLayout(self.names, (len(self.names), len(self.names), 0))
        self.skeleton_pub = self.create_publisher(BimanualSkeleton, CAMERA_SKELETON_TOPIC, RECORDED_STREAM_QOS)
        self.skeleton_bytes = BimanualSkeletonLayout(*[self.camera_frame] * 3)  # only the worker packs them
        self.status_pub = self.create_publisher(TeleopStatus, STATUS_TOPIC, STATUS_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, LIVE_QOS)
        # Composed with the tracker and glove nodes, these get their messages in-process, on their feed threads.
        # On_tf uses only transforms whose parent is the world frame: other /tf (the robot's) is never deserialised.
        self.tf_input = LocalSubscription(self, TFMessage, TF_TOPIC, self.on_tf, TF_QOS,
                                          required_bytes=self.world_frame.encode(),
                                          on_malformed=lambda error: self.on_malformed("tf", error),
                                          on_sample=self.on_trackers_sample)
        self.hands_input = LocalSubscription(self, BimanualSkeleton, settings.hands_topic, self.on_hands, LIVE_QOS,
                                             on_malformed=lambda error: self.on_malformed("hands", error),
                                             on_sample=self.on_hands_sample)
        self.create_service(Trigger, "~/calibrate", self.on_calibrate)
        create_steady_timer(self, 1.0 / settings.status_rate_hz, self.publish_status)

        self._running = True
        self._threads = [
            threading.Thread(target=self.retarget_loop, name="retarget-worker", daemon=True),
            threading.Thread(target=self.output_loop, name="retarget-200hz", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        self.get_logger().info(
            f"retargeting at {self.pipeline.config.smoothing.rate_hz:g} Hz output, "
            f"trackers under '{self.world_frame}'"
        )

    # --- inputs ---------------------------------------------------------------
    # A DDS message and an in-process sample (the composed glove and tracker nodes: what the message would
    # carry, without one) take one path from their fields on, so both give the solver the same numbers.
    def on_hands(self, msg: BimanualSkeleton) -> None:
        try:
            arrays = bimanual_skeleton_to_arrays(msg)
        except ValueError as error:
            self.stats.reject("malformed_hands")
            self.get_logger().warning(f"rejected a hand skeleton: {error}", throttle_duration_sec=2.0)
            return
        self.accept_hands(arrays, seconds_from_time(msg.header.stamp))

    def on_hands_sample(self, sample: Callable[[], HandsSample]) -> None:
        """In-process: the newest glove sample, converted when a tracker sample takes it (``current_hands``)."""
        with self.hands_lock:
            self.deferred_hands = (sample, time.monotonic())

    def accept_hands(self, arrays: dict, stamp: float, received: float | None = None) -> None:
        if not self.stamp_accepted(self.hands_stamps, "hands", stamp):
            return
        arrays["received"] = time.monotonic() if received is None else received
        self.hands = arrays

    def current_hands(self) -> dict | None:
        """The newest accepted glove sample; an in-process one still deferred is converted and checked first (one
        its source got wrong is counted, ``hands_malformed``, and the last good one stays)."""
        with self.hands_lock:
            deferred, self.deferred_hands = self.deferred_hands, None
        if deferred is not None:
            sample, received = deferred
            try:
                taken = sample()
            except (ValueError, TypeError) as error:
                self.on_malformed("hands", ValueError(f"a glove sample its source got wrong: {error}"))
            else:
                self.accept_hands(taken.arrays, taken.stamp, received)
        return self.hands

    def on_tf(self, msg: TFMessage) -> None:
        transforms = []
        for transform in msg.transforms:
            if transform.child_frame_id in self.tracker_by_frame and transform.header.frame_id == self.world_frame:
                t, q = transform.transform.translation, transform.transform.rotation
                transforms.append(TrackerTransform(transform.header.frame_id, transform.child_frame_id,
                                                   seconds_from_time(transform.header.stamp), (t.x, t.y, t.z),
                                                   (q.x, q.y, q.z, q.w)))
        self.on_trackers(transforms)

    def on_trackers(self, transforms: list[TrackerTransform]) -> None:
        taken = self.tracker_frame(transforms)
        if taken is not None:
            self.offer(taken)

    def on_trackers_sample(self, sample: Callable[[], list[TrackerTransform]]) -> None:
        """In-process: the newest tracker sample for the worker, which converts it (``tracker_frame``) if it takes it."""
        self.offer(sample)

    def converted(self, sample: Callable[[], list[TrackerTransform]]) -> tuple[OperatorFrame, int] | None:
        """An in-process tracker sample as ``tracker_frame`` makes it; one its source got wrong is counted
        (``tf_malformed``) and logged, and the worker goes on."""
        try:
            transforms = sample()
        except (ValueError, TypeError) as error:
            self.on_malformed("tf", ValueError(f"a tracker sample its source got wrong: {error}"))
            return None
        return self.tracker_frame(transforms)

    def tracker_frame(self, transforms: list[TrackerTransform]) -> tuple[OperatorFrame, int] | None:
        """An operator sample from a /tf message's tracker transforms, with the newest hands; and the tf order its
        stamp was accepted in. None when it is no operator sample (other TF traffic, a partial or invalid one) or
        its stamp is refused (counted)."""
        trackers = {}
        stamp = None
        for transform in transforms:
            name = self.tracker_by_frame.get(transform.child)
            if name is None or transform.parent != self.world_frame:
                continue
            pose = pose_matrix(transform.translation, transform.rotation)
            if not np.all(np.isfinite(pose)):
                self.stats.reject("tf_nonfinite")
                continue
            trackers[name] = pose
            stamp = transform.stamp
        if "chest" not in trackers:
            return None
        if not self.stamp_accepted(self.tf_stamps, "tf", stamp):
            return None
        order = self.tf_stamps.restarts
        frame = OperatorFrame(stamp=stamp, trackers=trackers)
        hands = self.current_hands()
        if hands is not None and time.monotonic() - hands["received"] <= self.hands_timeout:
            for index, side in enumerate(SIDES):
                setattr(
                    frame,
                    f"{side}_hand",
                    HandSkeleton(hands["joints"][index], hands["confidence"][index], bool(hands["valid"][index])),
                )
        elif hands is not None:
            self.stats.drop("stale_hands")
        return frame, order

    def offer(self, pending: tuple[OperatorFrame, int] | Callable[[], list[TrackerTransform]]) -> None:
        """The newest tracker sample for the worker (latest wins: the one it replaces is counted)."""
        with self.pending_ready:
            if self.pending is not None:
                self.stats.drop("superseded_tracker_sample")
            self.pending = pending
            self.pending_ready.notify()

    def on_malformed(self, stream: str, error: ValueError) -> None:
        self.stats.reject(f"{stream}_malformed")
        self.stamp_loggers[stream].warning(f"rejected a {stream} message: {error}", throttle_duration_sec=2.0)

    def stamp_accepted(self, bound: StampBound, stream: str, stamp: float) -> bool:
        """Counts ``{stream}_out_of_order`` (dropped) or ``{stream}_future_stamp`` (rejected, logged)."""
        now = self.get_clock().now().nanoseconds * 1e-9
        monotonic_now = time.monotonic()
        with self.stamps_lock:
            restarts = bound.restarts
            reason = bound.check(stamp, now, monotonic_now)
            if bound.restarts != restarts:
                self.stamp_loggers[stream].warning(
                    f"this machine's clock stepped back {-bound.clock_steps.last_step_s:.3f} s: {stream} stamps "
                    "start a new order")
        if reason == "out_of_order":
            self.stats.drop(f"{stream}_out_of_order")
        elif reason is not None:
            self.stats.reject(f"{stream}_{reason}")
            self.stamp_loggers[stream].warning(
                f"rejected a {stream} sample ({reason}): stamp {stamp - now:+.3f} s ahead of this node's clock "
                f"(bound {bound.max_future_s:g} s)", throttle_duration_sec=2.0)
        return reason is None

    def retarget_loop(self) -> None:
        """Solve the newest sample, at most every ``solve_interval`` (samples in between are superseded)."""
        next_solve = time.monotonic()
        while self._running:
            delay = next_solve - time.monotonic()
            if delay > 0:
                time.sleep(min(delay, 0.1))
                continue
            with self.pending_ready:
                self.pending_ready.wait_for(lambda: self.pending is not None or not self._running, timeout=0.1)
                pending, self.pending = self.pending, None
            if callable(pending):  # an in-process sample, converted now that it is taken
                pending = self.converted(pending)
            frame = None
            if pending is not None:
                frame, order = pending
                if order != self.guard_order:  # the first sample stamped after a clock step back
                    with self.lock:
                        self.pipeline.guard.restart_order()
                    self.guard_order = order
            if frame is not None:
                next_solve = time.monotonic() + self.solve_interval
                self.retarget(frame)
            with self.lock:
                self.pipeline.guard.check_stale(time.monotonic())  # counts stale episodes

    def retarget(self, frame: OperatorFrame) -> None:
        with self.stats.timed("retarget"), self.lock:
            output = self.pipeline.step(frame, time.monotonic())
            if output is None:
                return
            with self.smoother_lock:
                self.smoother.set_target(output.action)
            self.last_accepted = time.monotonic()
            self.last_frame = frame
            elbows = self.pipeline.elbows_in_camera(output.action)
        self.skeleton_pub.publish(bimanual_skeleton_bytes(  # no message built (rynn_common.cdr_layout)
            self.skeleton_bytes,
            output.skeleton_camera[0],
            output.skeleton_camera[1],
            stamp_ns_from_seconds(frame.stamp),
            left_valid=bool(output.skeleton_valid[0]),
            right_valid=bool(output.skeleton_valid[1]),
            left_elbow=elbows[0],
            right_elbow=elbows[1],
        ))

    # --- 200 Hz output --------------------------------------------------------
    def output_loop(self) -> None:
        schedule = OutputSchedule(self.smoother.period, MAX_CATCH_UP_S, time.monotonic())
        next_state = float("-inf")
        periods = 1  # this tick's: 1 + the periods skipped before it (the smoother's limits are in seconds)
        last_tick = None
        while self._running and rclpy.ok(context=self.context):
            now = time.monotonic()
            if last_tick is not None:
                self.stats.record("output_period", now - last_tick)
            last_tick = now
            if now - self.last_accepted > self.stale_after:
                self.stats.set_fault("stale_input", "no operator tracker data: holding the last target")
            else:
                self.stats.clear_fault("stale_input")
            with self.smoother_lock:
                position, velocity = self.smoother.step(periods)
            # Ruckig may overshoot a limit by rounding; the robot rejects any excursion.
            with_state = now >= next_state
            if with_state:
                following = next_state + self.command_state_interval
                next_state = following if following > now else now + self.command_state_interval
            self.publish_command(np.clip(position, self.pipeline.lower, self.pipeline.upper), velocity, schedule.index,
                                 with_state)
            delay, periods = schedule.next_tick(time.monotonic())
            if periods > 1:  # hopelessly behind: the missed periods are skipped (counted), a gap in the sequence
                self.stats.drop("skipped_output_period", periods - 1)
            if delay > 0:
                time.sleep(delay)

    def publish_command(self, position: np.ndarray, velocity: np.ndarray, sequence: int, with_state: bool = True) -> None:
        """``sequence``: the control period's index (skipped periods and refused commands leave gaps);
        ``with_state``: also publish it as /rynn/command/joint_states (rate-limited: command_state_rate_hz)."""
        stamp_ns = self.get_clock().now().nanoseconds
        try:
            positions = validate_action(position)
        except ValueError as error:  # the smoother never yields NaN; this guards the invariant
            self.stats.reject("invalid_command")
            self.get_logger().error(f"not publishing an invalid command: {error}", throttle_duration_sec=1.0)
            return
        # the bytes rclpy would serialise from the message, without building one (rynn_common.cdr_layout)
        self.action_pub.publish(self.action_bytes.pack(stamp_ns, positions, sequence))
        self.stats.count_output()
        if not with_state:
            return
        self.command_pub.publish(self.command_state_bytes.pack(stamp_ns, positions, velocity))

    # --- status and calibration -----------------------------------------------
    def publish_status(self) -> None:
        """Never waits for the solver (only the worker touches the pipeline; its counters are copied whole)."""
        counters = self.pipeline.counters
        self.stats.set_totals(
            dropped={f"guard_{name}": count for name, count in counters.items() if name in GUARD_DROPS},
            rejected={f"guard_{name}": count for name, count in counters.items()
                      if name not in GUARD_DROPS and name != "accepted"})
        with self.smoother_lock:
            self.stats.set_totals(rejected={"smoother_rejected_target": self.smoother.counters["rejected_targets"]})
        stamp = self.get_clock().now().to_msg()
        self.status_pub.publish(make_teleop_status(self.stats, self.get_name(), TeleopStatus.MODE_UNKNOWN, stamp))
        self.diagnostics_pub.publish(make_diagnostics(self.stats, f"{self.get_name()}: retarget", "operator", stamp))

    def on_calibrate(self, request, response):
        with self.lock:
            frame = self.last_frame
            if frame is None or not all(name in frame.trackers for name in TRACKER_NAMES):
                response.success = False
                response.message = "no complete tracker sample yet (need chest, wrists and upper arms)"
                return response
            calibration = self.pipeline.calibrate(frame)
        response.success = True
        response.message = "operator neutral pose captured"
        if self.calibration_file:
            save_calibration(self.calibration_file, calibration)
            response.message += f"; saved to {self.calibration_file}"
        self.get_logger().info(response.message)
        return response

    def destroy_node(self):
        self._running = False
        for thread in self._threads:
            thread.join(timeout=1.0)
        super().destroy_node()


COMPONENT = RetargetNode  # what a container (rynn_world.launcher.container) instantiates


def main(args=None):
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    run_node(RetargetNode, args)


if __name__ == "__main__":
    main()
