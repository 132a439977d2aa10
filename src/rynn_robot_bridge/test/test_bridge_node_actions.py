"""Every /rynn/action the bridge is sent is accounted for, in its own process over real DDS.

The bridge uses only the newest action. Injected bad ones (bench_soak's NaN actions) went missing:
of 17 in a 30-minute soak the bridge counted 12. Its reader kept one sample (best effort, depth 1)
and the retarget node's next action, 5 ms later, replaced an injected one its executor had not yet
taken, unseen. Each action must now be rejected (and counted) or, when valid and followed by a newer
one before the bridge used it, counted as superseded.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from ros_test_tools import read_log, wait_for_log, wait_until
from rynn_common.action_layout import ACTION_DIM
from rynn_common.description.joint_limits import joint_limits_from_urdf

pytestmark = pytest.mark.ros

INJECTED = 20  # NaN actions, each followed at once by valid ones: the worst case of an injection beside a 200 Hz stream
FOLLOWERS = 3  # valid actions published right behind each NaN one


def start_digital_bridge(start_process, lcm_url: str):
    """Digital mode: nothing reaches LCM, so no robot is needed; actions are checked in either mode."""
    bridge = start_process(
        ["-m", "rynn_robot_bridge.nodes.bridge_node", "--ros-args", "-p", "start_mode:=digital",
         "-p", f"lcm.url:={lcm_url}", "-p", "lcm.command_channel:=TEST_ACTIONS_COMMAND",
         "-p", "lcm.state_channel:=TEST_ACTIONS_STATE", "-p", "status_rate_hz:=20.0"],
        "bridge",
    )
    assert wait_for_log(bridge, r"bridge up in digital mode")
    return bridge


class BridgeCounters:
    """The bridge's newest /diagnostics counters and /rynn/status, each with how many arrived."""

    def __init__(self, node):
        from diagnostic_msgs.msg import DiagnosticArray
        from rynn_teleop_msgs.msg import TeleopStatus

        from rynn_common.qos import REPORTS_QOS

        self.values: dict[str, str] = {}
        self.reports = 0
        self.status = None
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, REPORTS_QOS)
        node.create_subscription(TeleopStatus, "/rynn/status", self._on_status, REPORTS_QOS)

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            if status.name == "rynn_bridge":
                self.values = {kv.key: kv.value for kv in status.values}
                self.reports += 1

    def _on_status(self, msg) -> None:
        if msg.source == "rynn_bridge":
            self.status = msg

    def count(self, key: str) -> int:
        return int(self.values.get(key, 0))


def test_every_nan_action_beside_a_fast_valid_stream_is_rejected_and_counted(ros_node, start_process, lcm_url):
    """A 200 Hz valid stream from one writer (the retarget node's profile) and NaN actions from another (as
    bench_soak injects them), each NaN one followed at once by valid ones, as if the stream's next samples
    arrived while the bridge's executor was busy. The bridge must reject every NaN action, exactly once."""
    from rynn_teleop_msgs.msg import RobotAction

    from rynn_common.qos import LIVE_QOS, RECORDED_STREAM_QOS

    counters = BridgeCounters(ros_node)
    stream_pub = ros_node.create_publisher(RobotAction, "/rynn/action", RECORDED_STREAM_QOS)
    injector_pub = ros_node.create_publisher(RobotAction, "/rynn/action", LIVE_QOS)
    valid = joint_limits_from_urdf().clamp(np.zeros(ACTION_DIM))
    stream_lock = threading.Lock()  # the stream thread and the injections share one writer
    sequence = [0]

    def publish_valid() -> None:
        with stream_lock:
            sequence[0] += 1
            stream_pub.publish(RobotAction(sequence=sequence[0], positions=valid))

    streaming = threading.Event()
    streaming.set()

    def stream() -> None:
        while streaming.is_set():
            publish_valid()
            time.sleep(0.005)  # the pace of the 200 Hz stream, not a wait for anything

    bridge = start_digital_bridge(start_process, lcm_url)
    spin = ros_node.spin_once
    streamer = threading.Thread(target=stream, name="valid-actions", daemon=True)
    streamer.start()
    try:
        assert wait_until(lambda: injector_pub.get_subscription_count() > 0 and counters.reports > 0, 60.0, spin=spin), (
            read_log(bridge))
        poisoned = RobotAction(sequence=0, positions=[float("nan")] * ACTION_DIM)
        for _ in range(INJECTED):
            injector_pub.publish(poisoned)
            for _ in range(FOLLOWERS):
                publish_valid()
            spin()  # a few ms between injections: the stream goes on meanwhile

        def summary() -> str:
            shown = {k: v for k, v in counters.values.items() if k.startswith(("rejected.", "dropped."))}
            return f"{INJECTED} NaN actions sent; bridge counters {shown}\n{read_log(bridge)}"

        assert wait_until(lambda: counters.count("rejected.action_non_finite") >= INJECTED, 30.0, spin=spin), summary()
        reports = counters.reports
        assert wait_until(lambda: counters.reports >= reports + 3, 10.0, spin=spin)  # later counts: none counted twice
        assert counters.count("rejected.action_non_finite") == INJECTED, summary()
        assert counters.count("dropped.action_lost_in_transport") == 0, summary()
        assert wait_until(lambda: counters.status is not None and counters.status.rejected_inputs == INJECTED, 10.0,
                          spin=spin), summary()
    finally:
        streaming.clear()
        streamer.join()
