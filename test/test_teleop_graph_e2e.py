"""Issue 7's "done when": the whole graph as separate processes, switched real -> digital -> real.

The embedded launcher starts the simulated robot on LCM (a port unique to this
session), the tracker/glove nodes on the synthetic operator, the retarget node (these three
in one container process, or one process each: the test runs both),
the world-model node (``tiny`` config) and the bridge. This test is a consumer
that subscribes once to the canonical topics and listens on the robot's LCM
channels, then checks what a policy or recorder would see across mode switches
and faults (a stalled action stream, a killed world model).
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections import deque

import lcm
import numpy as np
import pytest

from launched_graph import ALL_UP, launcher_args, node_pids, unique_lcm_url
from ros_test_tools import read_log, wait_until
from rynn_robot_bridge.bridge.lcm_link import with_receive_buffer
from rynn_robot_bridge.bridge.settings import BridgeSettings
from rynn_robot_bridge.lcm_protocol import MODE_HOLD, decode_command, decode_state

pytestmark = [pytest.mark.ros, pytest.mark.slow]

WIDTH, HEIGHT, FRAME = 320, 240, "camera_color_optical_frame"
COMMAND_CHANNEL, STATE_CHANNEL = "RYNN_ROBOT_COMMAND", "RYNN_ROBOT_STATE"  # src/rynn_robot_bridge/config/robot.yaml


def settled(read, spin, quiet_s: float = 1.0, timeout: float = 30.0):
    """``read()`` once it has not changed for ``quiet_s`` (spinning meanwhile); AssertionError after ``timeout``."""
    value, since, deadline = read(), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        wait_until(lambda: False, 0.1, spin=spin)
        if read() != value:
            value, since = read(), time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return value
    raise AssertionError(f"still changing after {timeout:g} s: {value}")


class RobotListener:
    """The robot's LCM traffic as the test sees it: states (positions, accepted-command counter) and commands."""

    def __init__(self, url: str):
        self.states: deque = deque(maxlen=20000)  # (position tuple, accepted_commands), 40 s at 500 Hz
        self.commands: list = []  # (utime us, is_motion)
        # The bridge's receive buffer: at the OS default (~208 KiB, 0.3 s of 500 Hz states) a starved test
        # process lost states in the kernel, and the bridge's /joint_states then showed states this listener never saw.
        self._lcm = lcm.LCM(with_receive_buffer(url, BridgeSettings().lcm_receive_buffer_bytes))
        self._lcm.subscribe(STATE_CHANNEL, self._on_state)
        self._lcm.subscribe(COMMAND_CHANNEL, self._on_command)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _on_state(self, _channel, data):
        state = decode_state(data)
        self.states.append((tuple(state.position), state.accepted_commands))

    def _on_command(self, _channel, data):
        command = decode_command(data)
        self.commands.append((command.utime, command.enable and command.mode != MODE_HOLD))

    def _receive(self):
        while not self._stop.is_set():
            self._lcm.handle_timeout(20)

    def accepted(self) -> int:
        return self.states[-1][1] if self.states else -1

    def positions(self) -> set:
        return {position for position, _ in list(self.states)}

    def commands_after(self, wall_time: float) -> list:
        return [(utime, motion) for utime, motion in list(self.commands) if utime > wall_time * 1e6]

    def close(self):
        self._stop.set()
        self._thread.join(timeout=1.0)


class Consumer:
    """A downstream consumer subscribed once to the canonical topics (plus the private camera
    topics, only to tell which source each canonical frame came from)."""

    def __init__(self, node):
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from rynn_teleop_msgs.msg import TeleopStatus
        from rynn_teleop_msgs.srv import SetMode
        from sensor_msgs.msg import CameraInfo, Image, JointState
        from std_msgs.msg import String

        self.node, self.SetMode = node, SetMode
        self.frames: list = []  # (stamp ns, (encoding, width, height, frame_id))
        self.infos: list = []
        self.source_stamps = {"real": set(), "digital": set()}
        self.joint_states: list = []  # position tuples
        self.commands: deque = deque(maxlen=400)  # /rynn/command/joint_states positions (50 Hz), ~8 s
        self.modes: list = []
        self.bridge_faults: list | None = None
        self.holding_since_s: float | None = None  # stamp of the first bridge status saying it holds for stale actions
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(Image, "/camera/camera/color/image_raw", self._on_frame, reliable)
        node.create_subscription(CameraInfo, "/camera/camera/color/camera_info", self._on_info, reliable)
        for source in self.source_stamps:
            node.create_subscription(Image, f"/rynn/{source}/camera/color/image_raw",
                                     lambda msg, s=source: self.source_stamps[s].add(stamp_ns(msg)), reliable)
        node.create_subscription(JointState, "/joint_states", lambda msg: self.joint_states.append(tuple(msg.position)), 50)
        node.create_subscription(JointState, "/rynn/command/joint_states",
                                 lambda msg: self.commands.append(np.array(msg.position)), 50)
        node.create_subscription(String, "/rynn/mode", lambda msg: self.modes.append(msg.data), latched)
        node.create_subscription(TeleopStatus, "/rynn/status", self._on_status, 20)
        self.set_mode_client = node.create_client(SetMode, "/rynn/set_mode")

    def _on_frame(self, msg):
        self.frames.append((stamp_ns(msg), (msg.encoding, msg.width, msg.height, msg.header.frame_id)))

    def _on_info(self, msg):
        self.infos.append((msg.width, msg.height, msg.header.frame_id, msg.distortion_model, tuple(msg.d), tuple(msg.k), tuple(msg.p)))

    def _on_status(self, msg):
        if msg.source == "rynn_bridge":
            self.bridge_faults = list(msg.faults)
            stamp_s = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            if not self.has_fault("real robot holding"):
                self.holding_since_s = None
            elif self.holding_since_s is None:
                self.holding_since_s = stamp_s  # when the bridge judged the actions stale

    def has_fault(self, text: str) -> bool:
        return any(text in fault for fault in self.bridge_faults or [])

    def frame_sources(self) -> list[str]:
        """Source of each canonical frame, matched by stamp (frames the private subscriptions missed are skipped)."""
        sources = []
        for stamp, _ in self.frames:
            sources += [name for name, stamps in self.source_stamps.items() if stamp in stamps]
        return sources

    def frames_from(self, source: str, since_index: int) -> int:
        return sum(1 for stamp, _ in self.frames[since_index:] if stamp in self.source_stamps[source])


def stamp_ns(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def switch_mode(consumer: Consumer, mode: int, spin) -> tuple[object, float]:
    """Call /rynn/set_mode; (response, wall time when it was answered)."""
    assert wait_until(consumer.set_mode_client.service_is_ready, 30.0, spin=spin)
    future = consumer.set_mode_client.call_async(consumer.SetMode.Request(mode=mode))
    assert wait_until(future.done, 15.0, spin=spin)
    return future.result(), time.time()


def measured_states_shown(consumer, robot, since: int) -> int:
    """How many /joint_states from index ``since`` on are states the robot sent on LCM (the measured state).
    Counted over all of them, not the newest few: under load this process's LCM thread falls behind the
    500 Hz states while DDS delivers /joint_states, so the newest ones are not in ``robot.positions()`` yet;
    waiting (10 s, then 30 s) for the newest 10 failed in both loaded runs."""
    positions = robot.positions()
    return sum(state in positions for state in consumer.joint_states[since:])


def distance_to_nearest(position, candidates) -> float:
    return min(float(np.abs(np.asarray(position) - candidate).max()) for candidate in candidates)


@pytest.mark.parametrize("compose", ["true", "false"])  # operator nodes in one container process, or one process each
def test_real_digital_real_behind_identical_topics_with_faults(ros_node, start_process, tmp_path, compose):
    lcm_url = unique_lcm_url()
    robot = RobotListener(lcm_url)
    consumer = Consumer(ros_node)
    launcher = start_process(
        launcher_args(
            tmp_path / "logs", "mode:=real", "source:=synthetic", "model_config:=tiny",
            f"camera_width:={WIDTH}", f"camera_height:={HEIGHT}", f"lcm_url:={lcm_url}", f"compose:={compose}",
            sets=(
                "sim_robot.sim.render_rate_hz=10.0",
                # generous: two loaded cores run seven processes and this test
                "rynn_bridge.action_timeout_ms=300.0", "rynn_bridge.state_timeout_ms=500.0",
                "rynn_bridge.camera_stall_timeout_ms=1000.0", "rynn_bridge.status_rate_hz=10.0",
            ),
        ),
        "launcher",
    )
    spin = ros_node.spin_once
    pids: dict[str, int] = {}
    Request = consumer.SetMode.Request
    try:
        assert wait_until(lambda: ALL_UP.search(read_log(launcher)) or launcher.poll() is not None, 180.0), read_log(launcher)
        assert launcher.poll() is None, read_log(launcher)
        pids = node_pids(read_log(launcher))
        retarget_pid = pids["operator"] if compose == "true" else pids["retarget_node"]  # composed: its container

        # Real mode: the simulated robot's camera and state, and it moves with the operator.
        assert wait_until(lambda: consumer.modes[-1:] == ["real"], 30.0, spin=spin), read_log(launcher)
        assert wait_until(lambda: consumer.frames_from("real", 0) >= 5, 60.0, spin=spin), read_log(launcher)
        accepted_before = robot.accepted()
        assert wait_until(lambda: robot.accepted() > accepted_before + 50, 60.0, spin=spin), (  # commands reach the robot
            f"robot accepted {robot.accepted() - accepted_before} new commands\n{read_log(launcher)[-4000:]}")
        assert wait_until(lambda: len(consumer.joint_states) > 20, 10.0, spin=spin)
        assert wait_until(lambda: measured_states_shown(consumer, robot, 0) >= 10, 30.0, spin=spin)

        # Real -> digital: the world model's frames on the same topics; /joint_states is the command; the robot gets nothing.
        response, digital_at = switch_mode(consumer, Request.MODE_DIGITAL, spin)
        assert response.success, response.message
        assert wait_until(lambda: consumer.modes[-1:] == ["digital"], 10.0, spin=spin)
        switched_index = len(consumer.frames)
        assert wait_until(lambda: consumer.frames_from("digital", switched_index) >= 5, 60.0, spin=spin), read_log(launcher)
        # Settled, not read at once: on a loaded machine the robot's states arrive late and still count
        # commands it accepted before the switch (7 seen under make test-under-load).
        accepted_in_digital = settled(robot.accepted, spin)
        joint_states_at = len(consumer.joint_states)
        assert wait_until(lambda: len(consumer.joint_states) > joint_states_at + 20, 10.0, spin=spin)
        # The virtual robot tracks the command: its newest state comes within 0.05 rad of a command of the last
        # ~2 s. Eventually, not at one instant: a starved bridge's limiter trails a moving command (0.25 rad seen
        # under make test-under-load) and this process takes both streams late; the operator's holds let it catch up.
        assert wait_until(lambda: distance_to_nearest(consumer.joint_states[-1], list(consumer.commands)) < 0.05, 60.0,
                          spin=spin), distance_to_nearest(consumer.joint_states[-1], list(consumer.commands))
        assert not set(consumer.joint_states[-10:]) & robot.positions()  # not the real robot's state
        wait_until(lambda: False, 0.5, spin=spin)  # the robot's state keeps streaming meanwhile
        assert robot.commands_after(digital_at) == [], "the real robot received commands in digital mode"
        assert robot.accepted() == accepted_in_digital

        # Digital -> real: the robot approaches the operator's command and the real camera is back.
        response, real_at = switch_mode(consumer, Request.MODE_REAL, spin)
        assert response.success, response.message
        switched_index = len(consumer.frames)
        assert wait_until(lambda: consumer.frames_from("real", switched_index) >= 5, 30.0, spin=spin), read_log(launcher)
        assert wait_until(lambda: robot.accepted() > accepted_in_digital + 50, 20.0, spin=spin)
        assert any(motion for _, motion in robot.commands_after(real_at))
        joint_states_at = len(consumer.joint_states)
        # A deadline, not a wait: under make test-under-load this process took 12 /joint_states in 30 s (9 measured).
        assert wait_until(lambda: measured_states_shown(consumer, robot, joint_states_at) >= 10, 120.0, spin=spin), (
            f"{measured_states_shown(consumer, robot, joint_states_at)} of {len(consumer.joint_states) - joint_states_at}")

        # Stale actions (the retarget node frozen): the bridge holds the robot and reports it; it resumes after.
        assert wait_until(lambda: consumer.bridge_faults is not None and not consumer.has_fault("real robot holding"), 10.0, spin=spin)
        os.kill(retarget_pid, signal.SIGSTOP)
        frozen_at = time.time()
        try:
            assert wait_until(lambda: consumer.has_fault("real robot holding"), 10.0, spin=spin), read_log(launcher)
            stale_at = consumer.holding_since_s
            assert stale_at is not None and stale_at > frozen_at, (stale_at, frozen_at)  # a verdict on this freeze
            assert wait_until(lambda: any(not motion for _, motion in robot.commands_after(stale_at)), 5.0, spin=spin)
            held_for = len(consumer.bridge_faults or [])
            wait_until(lambda: False, 0.5, spin=spin)  # half a second of commands while frozen
            # From the bridge's stale verdict on, holds only. Not from the first hold after the freeze: on a loaded
            # machine that can be the robot state's 100 ms timeout, after which the last actions, still fresh, move on.
            assert held_for and not [u for u, motion in robot.commands_after(stale_at) if motion], "motion while actions are stale"
        finally:
            os.kill(retarget_pid, signal.SIGCONT)
        assert wait_until(lambda: not consumer.has_fault("real robot holding"), 15.0, spin=spin), read_log(launcher)

        # The world model dies in digital mode: a bridge fault, and the camera topic goes quiet (no stale frames).
        response, _ = switch_mode(consumer, Request.MODE_DIGITAL, spin)
        assert response.success, response.message
        switched_index = len(consumer.frames)
        assert wait_until(lambda: consumer.frames_from("digital", switched_index) >= 3, 60.0, spin=spin), read_log(launcher)
        os.kill(pids["world_model_node"], signal.SIGKILL)
        killed_at_ns = time.time_ns()
        assert wait_until(lambda: consumer.has_fault("digital camera stalled"), 15.0, spin=spin), read_log(launcher)
        # Frames published before the kill may still be on their way (a loaded machine delivered one 1.5 s late):
        # they may arrive, stamped before the kill; then the topic is quiet, nothing repeated or made up.
        fault_index = len(consumer.frames)
        wait_until(lambda: False, 1.5, spin=spin)
        assert all(stamp < killed_at_ns for stamp, _ in consumer.frames[fault_index:]), "frames stamped after the world model died"
        quiet_from = len(consumer.frames)
        wait_until(lambda: False, 1.5, spin=spin)
        assert len(consumer.frames) == quiet_from, "frames after the world model died"
        assert consumer.has_fault("digital camera stalled")
        assert re.search(r"world_model_node exited \(killed by SIGKILL\); (not required, the graph keeps running|respawning in)",
                         read_log(launcher)), read_log(launcher)  # optional or respawned (graph policy): never stops the graph
        assert launcher.poll() is None

        # One consumer, one subscription: every frame and every camera info identical in format across the switches.
        assert {fmt for _, fmt in consumer.frames} == {("rgb8", WIDTH, HEIGHT, FRAME)}
        assert len(set(consumer.infos)) == 1, set(consumer.infos)
        sources = consumer.frame_sources()
        blocks = [source for i, source in enumerate(sources) if i == 0 or sources[i - 1] != source]
        assert blocks == ["real", "digital", "real", "digital"]  # switches are atomic: sources never interleave
        stamps = [stamp for stamp, _ in consumer.frames]
        assert len(stamps) == len(set(stamps))  # never a repeated frame

        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=60) == 0, read_log(launcher)
    finally:
        if pids.get("retarget_node") or pids.get("operator"):
            try:
                os.kill(pids.get("retarget_node") or pids["operator"], signal.SIGCONT)
            except ProcessLookupError:
                pass
        robot.close()
