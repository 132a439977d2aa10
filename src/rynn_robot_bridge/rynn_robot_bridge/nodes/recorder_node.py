"""Episode recorder: the canonical topics into one rosbag2 MCAP bag per episode.

Services (std_srvs/Trigger): ``/rynn/recorder/start`` (answers the episode
directory), ``/rynn/recorder/stop`` (answers the episode summary as JSON),
``/rynn/recorder/discard`` (deletes the recording episode, else the one stopped
last). The parameters ``task`` and ``operator_id`` are read at start. Topics and
settings: this package's config/recorder.yaml (``config_file`` replaces it), every key a
parameter (rynn_common.node_settings: an explicit parameter wins over the file).

Subscriptions are raw (the CDR bytes go into the bag untouched), RELIABLE, and
TRANSIENT_LOCAL for latched topics such as ``/rynn/mode``; the node takes what they received every
``take_period_s`` (rynn_common.polled_input: no executor callback per message), and each message is logged
at the time DDS received it, written in that order across topics (recording.reception_order). Per topic the node
counts received, written, failed, dropped (write queue full: a slow disk) and
transport-lost messages and reports them on ``/rynn/status`` and ``/diagnostics`` and
in each episode's metadata. Callbacks only queue; the core's writer thread writes, so a
stalled disk never stalls the subscriptions, and the services answer within
``service_wait_s``. A full volume stops the episode cleanly (``disk_full`` fault on
``/rynn/status`` and ``/diagnostics`` until an episode starts again). Episodes a
crashed recorder left without metadata.yaml are recovered at start-up.

The graph respawns a killed recorder. Before its DDS participant exists, the process marks the
shared-memory ports of dead Fast DDS readers (the killed recorder's) "not ok", as every node's
start does (rynn_common.node_runner, rynn_common.fastdds_shm): otherwise the running nodes could keep
writing its requests and messages into the killed one's segment, and the respawned recorder would never hear them.
"""

from __future__ import annotations

import importlib
import json
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, KeyValue
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rynn_teleop_msgs.msg import TeleopStatus
from std_srvs.srv import Trigger

from rynn_common.clock_steps import create_steady_timer
from rynn_common.config_paths import find_config
from rynn_common.node_runner import run_node
from rynn_common.node_settings import declare_settings
from rynn_common.pipeline_stats import PipelineStats
from rynn_common.polled_input import PolledSubscription
from rynn_common.qos import LATCHED_QOS, LIVE_QOS, RECORDER_IMAGE_QOS, RECORDER_STREAM_QOS, STATUS_QOS
from rynn_common.ros_conversions import make_diagnostics, make_teleop_status
from rynn_common.ros_names import DIAGNOSTICS_TOPIC, RECORDER_SERVICES, STATUS_TOPIC
from rynn_robot_bridge.recording.reception_order import ReceptionOrder
from rynn_robot_bridge.recording.recorder import EpisodeRecorder, RecorderError
from rynn_robot_bridge.recording.recover import find_incomplete, recover_episode
from rynn_robot_bridge.recording.rosbag2_mcap import OfferedQos
from rynn_robot_bridge.recording.settings import RecorderSettings, parse_topic

NODE_NAME = "rynn_recorder"


def message_class(msgtype: str):
    package, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


def subscription_qos(msgtype: str, latched: bool) -> QoSProfile:
    if latched:
        return LATCHED_QOS
    return RECORDER_IMAGE_QOS if msgtype == "sensor_msgs/msg/Image" else RECORDER_STREAM_QOS


class RecorderNode(Node):
    def __init__(self):
        super().__init__(NODE_NAME)
        settings = declare_settings(self, RecorderSettings, find_config("rynn_robot_bridge", "recorder.yaml"))
        self.recorder = EpisodeRecorder(settings)  # thread-safe; writes on its own thread
        self.service_wait_s = settings.service_wait_s
        self.stats = PipelineStats()
        self._lock = threading.Lock()  # the stats and the offered QoS (the recorder core locks itself)
        self._fault_logged: str | None = None
        for episode in find_incomplete(self.recorder.output_dir):
            summary = recover_episode(episode)
            self.get_logger().warning(f"recovered {episode.name} left by a crashed recorder: "
                                      f"{summary['messages_written']} messages")

        if settings.take_period_s <= 0:
            raise ValueError(f"take_period_s must be positive, got {settings.take_period_s}")
        self._order: ReceptionOrder[tuple[str, str, bytes]] = ReceptionOrder(int(settings.reception_hold_back_s * 1e9))
        self._inputs: list[tuple[str, str, PolledSubscription]] = []
        for entry in settings.topics:
            topic, msgtype = parse_topic(entry)
            self.recorder.check_type(msgtype)
            events = SubscriptionEventCallbacks(
                incompatible_qos=lambda event, t=topic: self._incompatible(t, event),
                message_lost=lambda status, t=topic: self._lost(t, status.total_count_change),
            )
            self._inputs.append((topic, msgtype, PolledSubscription(
                self, message_class(msgtype), topic, subscription_qos(msgtype, topic in settings.latched_topics),
                event_callbacks=events)))
        create_steady_timer(self, settings.take_period_s, self._take_messages)
        self.create_service(Trigger, RECORDER_SERVICES["start"], self._on_start)
        self.create_service(Trigger, RECORDER_SERVICES["stop"], self._on_stop)
        self.create_service(Trigger, RECORDER_SERVICES["discard"], self._on_discard)
        self.status_pub = self.create_publisher(TeleopStatus, STATUS_TOPIC, STATUS_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, LIVE_QOS)
        create_steady_timer(self, 1.0 / settings.status_rate_hz, self._publish_status)
        create_steady_timer(self, min(0.25, settings.flush_period_s / 2), self._flush_if_due)
        self.get_logger().info(f"recorder up: {len(settings.topics)} topics -> {self.recorder.output_dir}")

    # --- messages ---------------------------------------------------------------------------

    def _take_messages(self, everything: bool = False) -> None:
        """What the subscriptions received, offered in the order DDS received it (across topics and takes,
        recording.reception_order), each logged at its reception time; ``everything`` also offers what was
        received too recently to be sure no older message is still on its way (a start, a stop, shutdown)."""
        take_started_ns = time.time_ns()  # the clock of Fast DDS's reception stamps
        for topic, msgtype, polled in self._inputs:
            while (message := polled.take()) is not None:
                raw, info = message
                self._order.add(info["received_timestamp"] or time.time_ns(), (topic, msgtype, raw))
        late = self._order.late
        for stamp_ns, (topic, msgtype, raw) in self._order.release(None if everything else take_started_ns):
            self._on_message(topic, msgtype, raw, stamp_ns)
        if self._order.late != late:
            self.get_logger().warning(f"{self._order.late} message(s) surfaced after newer ones were written: "
                                      "logged at the newer time", throttle_duration_sec=5.0)

    def _on_message(self, topic: str, msgtype: str, raw: bytes, stamp_ns: int) -> None:
        started = time.perf_counter()
        if not self.recorder.offered_qos.get(topic):
            with self._lock:
                self._learn_offered_qos(topic)
        try:
            self.recorder.offer(topic, msgtype, raw, stamp_ns)  # queued: the core's writer thread writes it
        except Exception as exc:  # counted as failed by the recorder; the node keeps recording
            with self._lock:
                self.stats.set_fault(f"write {topic}", f"writing {topic} failed: {exc}")
            self.get_logger().error(f"writing {topic} failed: {exc}", throttle_duration_sec=5.0)
            return
        if self.recorder.recording:
            with self._lock:
                self.stats.record("bag_queue", time.perf_counter() - started)

    def _learn_offered_qos(self, topic: str) -> None:
        """What the topic's publishers offer, as ``ros2 bag record`` stores it (asked once a sample arrived)."""
        self.recorder.offered_qos[topic] = [
            OfferedQos.from_profile(info.qos_profile) for info in self.get_publishers_info_by_topic(topic)
        ]

    def _lost(self, topic: str, count: int) -> None:
        if self.recorder.note_lost(topic, count):
            self.get_logger().warning(f"{count} message(s) on {topic} lost in transport")

    def _incompatible(self, topic: str, event) -> None:
        policy = str(event.last_policy_kind).rsplit("POLICY_", 1)[-1]
        with self._lock:
            self.stats.set_fault(f"qos {topic}", f"a publisher on {topic} offers incompatible QoS ({policy}); not recorded")

    def _flush_if_due(self) -> None:
        self.recorder.flush_if_due(time.monotonic())  # queued for the writer thread

    # --- services ---------------------------------------------------------------------------

    def _on_start(self, _request, response: Trigger.Response) -> Trigger.Response:
        self._take_messages(everything=True)  # what arrived before the start is not the episode's
        task = self.get_parameter("task").value
        operator_id = self.get_parameter("operator_id").value
        for name, value in (("task", task), ("operator_id", operator_id)):
            if not isinstance(value, str):  # parameters are dynamically typed: anyone may set a number
                response.success = False
                response.message = f"the {name} parameter must be text, not {type(value).__name__} {value!r}"
                return response
        try:
            start_ns = self.get_clock().now().nanoseconds
            name = self.recorder.start(task, operator_id, start_ns, time.monotonic(), timeout=self.service_wait_s)
        except (RecorderError, OSError, ValueError) as exc:
            response.success, response.message = False, str(exc)
            return response
        self._order.advance(start_ns)  # the latched samples open the bag at the start's time
        path, mode = self.recorder.output_dir / name, self.recorder.mode
        response.success, response.message = True, str(path)
        self.get_logger().info(f"recording {name} (task={task!r}, operator={operator_id!r}, mode={mode})")
        return response

    def _on_stop(self, _request, response: Trigger.Response) -> Trigger.Response:
        self._take_messages(everything=True)  # what arrived before the stop is
        try:
            summary = self.recorder.stop(timeout=self.service_wait_s)
        except RecorderError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, json.dumps(summary, sort_keys=True)
        self.get_logger().info(f"stopped {summary['episode']}: {summary['messages_written']} messages written")
        return response

    def _on_discard(self, _request, response: Trigger.Response) -> Trigger.Response:
        try:
            name = self.recorder.discard(timeout=self.service_wait_s)
        except (RecorderError, OSError) as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, f"discarded {name}"
        self.get_logger().info(f"discarded {name}")
        return response

    # --- status -----------------------------------------------------------------------------

    def _publish_status(self) -> None:
        stamp = self.get_clock().now().to_msg()
        now = self.recorder.snapshot()
        if now.fault and now.fault != self._fault_logged:
            self.get_logger().error(now.fault)
        self._fault_logged = now.fault
        with self._lock:
            if now.fault:
                self.stats.set_fault("disk_full", now.fault)
            else:
                self.stats.clear_fault("disk_full")
            dropped = {f"{topic} lost": c.lost for topic, c in now.totals.items()}
            dropped.update({f"{topic} queue_full": c.dropped for topic, c in now.totals.items()})
            self.stats.set_totals(outputs=sum(c.written for c in now.totals.values()), dropped=dropped,
                                  rejected={f"{topic} write_failed": c.failed for topic, c in now.totals.items()})
            status = make_teleop_status(self.stats, NODE_NAME, TeleopStatus.MODE_UNKNOWN, stamp)
            diagnostics = make_diagnostics(self.stats, NODE_NAME, str(self.recorder.output_dir), stamp)
            values = [KeyValue(key="recording", value=now.episode),
                      KeyValue(key="mode", value=now.mode),
                      KeyValue(key="idle_messages", value=str(now.idle)),
                      KeyValue(key="late_messages", value=str(self._order.late)),
                      KeyValue(key="queued_messages", value=str(now.queued_messages)),
                      KeyValue(key="queued_bytes", value=str(now.queued_bytes))]
            for topic, counts in sorted(now.episode_counts.items()):
                values += [KeyValue(key=f"episode{topic}.{k}", value=str(v)) for k, v in counts.as_dict().items()]
            for topic, counts in sorted(now.totals.items()):
                values += [KeyValue(key=f"total{topic}.{k}", value=str(v)) for k, v in counts.as_dict().items()]
        diagnostics.status[0].values.extend(values)
        self.status_pub.publish(status)
        self.diagnostics_pub.publish(diagnostics)

    def destroy_node(self):
        """Ctrl-C / SIGTERM finish the recording episode (metadata.yaml written) first."""
        self._take_messages(everything=True)
        self.recorder.close()
        for _topic, _msgtype, polled in self._inputs:
            polled.destroy()
        super().destroy_node()


def main(args=None) -> None:
    run_node(RecorderNode, args)

if __name__ == "__main__":
    main()
