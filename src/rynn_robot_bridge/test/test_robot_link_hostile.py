"""Issue 17, the robot link under hostile input: the bridge node (or the simulated robot) in its own
process over real DDS and real LCM (UDP multicast), attacked from this test process.

Rows: 1 NaN robot state must not kill the 200 Hz command thread; 2 an absurd finite state must not
reach /joint_states or the approach start; 3 the digital robot never takes a NaN state; 4 the
simulated robot's gate bounds the velocity feed-forward; 5 a second commander is detected and the
bridge stops commanding; 10 commands keep flowing under an LCM flood.
"""

from __future__ import annotations

import threading
import time

import lcm
import numpy as np
import pytest
from test_bridge_node import COMMAND_CHANNEL, STATE_CHANNEL, LcmRobot  # the servo robot on LCM, shared

from ros_test_tools import wait_for_log
from rynn_common.action_layout import ACTION_DIM
from rynn_common.description.joint_limits import joint_limits_from_urdf
from rynn_robot_bridge.lcm_protocol import MODE_HOLD, RobotState, decode_command, decode_state, encode_command, encode_state

pytestmark = [pytest.mark.ros, pytest.mark.slow]

BIG_BUFFER = "&recv_buf_size=4194304"  # this process's own sockets must not drop what it measures
LIMITS = joint_limits_from_urdf()
HOME = LIMITS.clamp(np.zeros(ACTION_DIM))


def state_packet(sequence: int, position, velocity=None, echo=(-1, 0)) -> bytes:
    position = np.asarray(position, dtype=np.float64)
    velocity = np.zeros(ACTION_DIM) if velocity is None else velocity
    return encode_state(RobotState(0, sequence, echo[0], echo[1], position, velocity, np.zeros(ACTION_DIM),
                                   0, 0, 0, 0, 0, 0, 0, 0))


class HostileSender:
    """Publishes packets on the state channel at ``rate_hz`` from its own thread and socket until stopped."""

    def __init__(self, url: str, make_packet, rate_hz: float):
        self._lcm = lcm.LCM(url)
        self._make_packet, self._period = make_packet, 1.0 / rate_hz
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        start = time.monotonic()
        while not self._stop.is_set():
            due = int((time.monotonic() - start) / self._period) + 1
            while self.sent < due:  # catch up in bursts when the thread was late: the rate is kept
                self.sent += 1
                self._lcm.publish(STATE_CHANNEL, self._make_packet(self.sent))
            self._stop.wait(0.002)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=2.0)


class Operator:
    """The test's ROS side: /rynn/action at 50 Hz; records /joint_states, /rynn/status, /diagnostics."""

    def __init__(self, node, action: np.ndarray):
        from diagnostic_msgs.msg import DiagnosticArray
        from rynn_teleop_msgs.msg import RobotAction, TeleopStatus
        from rynn_teleop_msgs.srv import SetMode
        from sensor_msgs.msg import JointState

        self.node, self.RobotAction, self.SetMode = node, RobotAction, SetMode
        self.action = action.copy()
        self.sending_actions = True
        self.joint_states: list[tuple[float, np.ndarray]] = []  # (monotonic arrival, position)
        self.statuses = []
        self.diagnostics = []
        node.create_subscription(JointState, "/joint_states",
                                 lambda m: self.joint_states.append((time.monotonic(), np.array(m.position))), 50)
        node.create_subscription(TeleopStatus, "/rynn/status", self.statuses.append, 10)
        node.create_subscription(DiagnosticArray, "/diagnostics", self.diagnostics.append, 10)
        self.action_pub = node.create_publisher(RobotAction, "/rynn/action", 10)
        self.set_mode_client = node.create_client(SetMode, "/rynn/set_mode")
        node.create_timer(1 / 50, self._publish_action)

    def _publish_action(self):
        if self.sending_actions:
            msg = self.RobotAction()
            msg.header.stamp = self.node.get_clock().now().to_msg()
            msg.positions = self.action
            self.action_pub.publish(msg)

    def faults(self) -> list[str]:
        return list(self.statuses[-1].faults) if self.statuses else []

    def ever_faulted(self, text: str) -> bool:
        return any(text in f for s in self.statuses for f in s.faults)

    def diagnostic_value(self, key: str) -> int:
        values = {kv.key: kv.value for kv in self.diagnostics[-1].status[0].values} if self.diagnostics else {}
        return int(values.get(key, 0))


def start_bridge(start_process, lcm_url: str, *extra: str):
    return start_process(
        ["-m", "rynn_robot_bridge.nodes.bridge_node", "--ros-args", "-p", "start_mode:=real", "-p", f"lcm.url:={lcm_url}",
         "-p", f"lcm.command_channel:={COMMAND_CHANNEL}", "-p", f"lcm.state_channel:={STATE_CHANNEL}",
         # generous timeouts: two loaded CPU cores run the bridge, the robot and the test
         "-p", "action_timeout_ms:=300.0", "-p", "state_timeout_ms:=300.0", "-p", "status_rate_hz:=20.0", *extra],
        "bridge",
    )


def call_set_mode(operator: Operator, wait_until, mode: int):
    spin = operator.node.spin_once
    assert wait_until(operator.set_mode_client.service_is_ready, 30.0, spin=spin)
    future = operator.set_mode_client.call_async(operator.SetMode.Request(mode=mode))
    assert wait_until(future.done, 10.0, spin=spin)
    return future.result()


@pytest.fixture
def bridge_setup(ros_node, start_process, repo_conftest, lcm_url):
    """A bridge in real mode tracking the operator's command on a servo robot; yields (robot, operator, bridge)."""
    target = HOME.copy()
    target[:3] += 0.05
    robot = LcmRobot(lcm_url + BIG_BUFFER, HOME)
    operator = Operator(ros_node, target)
    bridge = start_bridge(start_process, lcm_url)
    try:
        # Up first (its imports took most of the 60 s on the loaded machine), then 60 s to reach the target.
        assert wait_for_log(bridge, r"bridge up in real mode"), repo_conftest.read_log(bridge)
        reached = repo_conftest.wait_until(lambda: np.allclose(robot.position, target, atol=1e-9), 60.0,
                                           spin=ros_node.spin_once)
        assert reached, repo_conftest.read_log(bridge)
        yield robot, operator, bridge
    finally:
        robot.close()


def spin_for(node, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        node.spin_once(0.02)


def test_row1_nan_robot_state_is_rejected_and_the_command_thread_keeps_running(bridge_setup, ros_node, repo_conftest, lcm_url):
    robot, operator, bridge = bridge_setup
    wait_until, spin = repo_conftest.wait_until, ros_node.spin_once
    nan_state = np.full(ACTION_DIM, np.nan)
    # ~1.2 s in which the state stream is NaN at 2 kHz (the robot's own states stop), as in the issue, with a
    # pause of the operator's actions inside it: the bridge holds, then restarts motion with an approach (Ruckig).
    robot.publishing.clear()
    hostile = HostileSender(lcm_url, lambda seq: state_packet(10**6 + seq, nan_state), 2000.0)
    spin_for(ros_node, 0.2)
    operator.sending_actions = False
    spin_for(ros_node, 0.6)  # > action_timeout_ms: a hold
    operator.sending_actions = True
    spin_for(ros_node, 0.4)
    hostile.stop()
    robot.publishing.set()
    stopped = time.time()
    # The command thread is alive: commands keep coming, and motion resumes towards a new target.
    assert wait_until(lambda: len(robot.commands_sent_after(stopped)) >= 100, 10.0, spin=spin), repo_conftest.read_log(bridge)
    new_target = operator.action.copy()
    new_target[7:10] -= 0.05
    operator.action = new_target
    assert wait_until(lambda: np.allclose(robot.position, new_target, atol=1e-9), 20.0, spin=spin), repo_conftest.read_log(bridge)
    # Nothing non-finite was published or sent; the rejections were counted and reported as a fault.
    assert operator.joint_states and all(np.isfinite(p).all() for _, p in operator.joint_states)
    assert all(np.isfinite(c.position).all() for c in list(robot.commands))
    assert operator.ever_faulted("robot state rejected (non_finite")
    assert wait_until(lambda: operator.diagnostic_value("rejected.robot_state_non_finite") > 0.5 * hostile.sent, 5.0, spin=spin)
    assert wait_until(lambda: not any("robot_state" in f for f in operator.faults()), 5.0, spin=spin)
    # No cycle failed and the loop never stopped. (A starved machine may report it "stalled": a liveness
    # report of CPU starvation, not of the NaN state; the commands above show the thread alive.)
    assert not operator.ever_faulted("loop stopped") and not operator.ever_faulted("cycle failed")
    assert operator.diagnostic_value("dropped.command_cycle_errors") == 0 and bridge.poll() is None


def motion(commands) -> list:
    return [c for c in commands if c.enable and c.mode != MODE_HOLD]


def test_row2_absurd_finite_state_reaches_neither_joint_states_nor_the_approach(bridge_setup, ros_node, repo_conftest, lcm_url):
    robot, operator, bridge = bridge_setup
    wait_until, spin = repo_conftest.wait_until, ros_node.spin_once
    true_pose = robot.position.copy()
    operator.sending_actions = False  # the operator pauses: the bridge holds
    paused = time.time()
    assert wait_until(lambda: any(c.mode == MODE_HOLD for c in robot.commands_sent_after(paused)), 5.0, spin=spin)
    # Meanwhile the state stream says 1000 rad (the robot's own states stop, so it is the newest state).
    robot.publishing.clear()
    spoof = HostileSender(lcm_url, lambda seq: state_packet(10**6 + seq, np.full(ACTION_DIM, 1e3)), 1000.0)
    spin_for(ros_node, 0.3)
    new_target = true_pose.copy()
    new_target[:3] -= 0.05
    operator.action, operator.sending_actions = new_target, True  # the operator resumes during the spoof
    resumed = time.time()
    spin_for(ros_node, 0.5)
    robot.publishing.set()
    spin_for(ros_node, 0.2)
    spoof.stop()
    assert wait_until(lambda: np.allclose(robot.position, new_target, atol=1e-9), 30.0, spin=spin), repo_conftest.read_log(bridge)
    # Motion restarted from the robot's true pose, never from the spoof, and stayed in the limits.
    moving = motion(robot.commands_sent_after(resumed))
    assert np.abs(moving[0].position - true_pose).max() < 0.01, np.abs(moving[0].position - true_pose).max()
    assert all(((c.position >= LIMITS.lower - 1e-9) & (c.position <= LIMITS.upper + 1e-9)).all() for c in moving)
    # /joint_states never carried the spoof; the rejections were counted and reported.
    assert max(np.abs(p).max() for _, p in operator.joint_states) < 4.0
    assert operator.ever_faulted("robot state rejected (joint_limit")
    assert wait_until(lambda: operator.diagnostic_value("rejected.robot_state_joint_limit") > 0.5 * spoof.sent, 5.0, spin=spin)


def test_row3_the_digital_robot_never_takes_a_nan_state_around_a_switch(bridge_setup, ros_node, repo_conftest, lcm_url):
    robot, operator, bridge = bridge_setup
    wait_until, spin = repo_conftest.wait_until, ros_node.spin_once
    assert wait_until(operator.set_mode_client.service_is_ready, 30.0, spin=spin)
    robot.publishing.clear()  # for 130 ms the state stream is NaN; the switch to digital falls inside it
    started = time.monotonic()
    hostile = HostileSender(lcm_url, lambda seq: state_packet(10**6 + seq, np.full(ACTION_DIM, np.nan)), 2000.0)
    spin_for(ros_node, 0.065)
    response = call_set_mode(operator, wait_until, operator.SetMode.Request.MODE_DIGITAL)
    switched = time.monotonic()
    spin_for(ros_node, max(0.0, 0.13 - (switched - started)))
    hostile.stop()
    robot.publishing.set()
    assert response.success, response.message
    digital_target = operator.action.copy()
    digital_target[7:10] += 0.05
    operator.action = digital_target
    # The virtual robot starts from the last good state and follows the operator: finite all along.
    assert wait_until(lambda: operator.joint_states and np.allclose(operator.joint_states[-1][1], digital_target), 10.0, spin=spin)
    assert wait_until(lambda: sum(t > switched for t, _ in operator.joint_states) > 100, 10.0, spin=spin)  # ~1 s
    after = [p for t, p in operator.joint_states if t > switched]
    assert all(np.isfinite(p).all() for p in after) and np.allclose(after[-1], digital_target)
    assert all(np.isfinite(p).all() for _, p in operator.joint_states)
    assert wait_until(lambda: operator.ever_faulted("robot state rejected (non_finite"), 5.0, spin=spin)


SIM_COMMAND, SIM_STATE = "RYNN_ROBOT_COMMAND", "RYNN_ROBOT_STATE"  # the simulated robot's channels (robot.yaml)


class SimRobotLink:
    """This process's LCM endpoint next to the simulated robot: every state and command on the bus, recorded."""

    def __init__(self, url: str):
        self.states: list[tuple[float, object]] = []  # (monotonic arrival, decoded state)
        self.commands: list[tuple[float, object]] = []  # every command on the bus, whoever sent it
        self._lcm = lcm.LCM(url + BIG_BUFFER)
        self._lcm.subscribe(SIM_STATE, lambda _c, data: self.states.append((time.monotonic(), decode_state(data))))
        self._lcm.subscribe(SIM_COMMAND, lambda _c, data: self.commands.append((time.monotonic(), decode_command(data))))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _receive(self):
        while not self._stop.is_set():
            self._lcm.handle_timeout(20)

    @property
    def latest(self):
        return self.states[-1][1] if self.states else None

    def states_after(self, monotonic: float) -> list:
        return [s for t, s in list(self.states) if t > monotonic]

    def send(self, packet: bytes) -> None:
        self._lcm.publish(SIM_COMMAND, packet)

    def close(self):
        self._stop.set()
        self._thread.join(timeout=1.0)


def start_sim(start_process, lcm_url):
    return start_process(["-m", "rynn_robot_bridge.nodes.sim_robot_node", "--ros-args", "-p", f"lcm.url:={lcm_url}",
                          "-p", "sim.render_rate_hz:=0.0"], "sim_robot")


@pytest.fixture
def sim_link(lcm_url):
    link = SimRobotLink(lcm_url)
    yield link
    link.close()


def test_row4_the_simulated_robots_gate_bounds_the_velocity_feedforward(start_process, repo_conftest, lcm_url, sim_link):
    wait_until, read_log = repo_conftest.wait_until, repo_conftest.read_log
    sim = start_sim(start_process, lcm_url)
    assert wait_until(lambda: len(sim_link.states) > 10, 60.0), read_log(sim)
    home = sim_link.latest.position.copy()
    velocity_limit = LIMITS.velocity
    sequence = 0

    def stream(count: int, feedforward) -> float:
        nonlocal sequence
        started = time.monotonic()
        for _ in range(count):  # 200 Hz
            sequence += 1
            sim_link.send(encode_command(home, sequence, velocity_feedforward=feedforward))
            time.sleep(0.005)
        return started

    stream(100, np.zeros(ACTION_DIM))
    assert wait_until(lambda: sim_link.latest.accepted_commands == 100, 5.0), read_log(sim)
    attacked = stream(200, np.full(ACTION_DIM, 1e4))  # 1 s of a valid target with a 10^4 rad/s feed-forward
    assert wait_until(lambda: sim_link.latest.accepted_commands + sim_link.latest.rejected_joint_limit >= 300, 5.0)
    observed_until = time.monotonic() + 0.3  # the joints' response to the last attacking command
    assert wait_until(lambda: sim_link.states[-1][0] > observed_until, 2.0)
    during = sim_link.states_after(attacked)
    speed_ratio = max(np.max(np.abs(s.velocity) / velocity_limit) for s in during)
    beyond_limits = max(np.max(np.maximum(LIMITS.lower - s.position, s.position - LIMITS.upper)) for s in during)
    assert speed_ratio < 1.5 and beyond_limits < 0.01, f"{speed_ratio:.1f} x the velocity limit, {beyond_limits:.3f} rad past"
    assert during[-1].accepted_commands == 100 and during[-1].rejected_joint_limit == 200
    assert any(s.fault_flags & 32 for s in during)  # FAULT_JOINT_LIMIT
    # A feed-forward within the joint velocity limits is still accepted (after the watchdog, a new baseline).
    stream(50, 0.5 * velocity_limit * np.sign(np.arange(ACTION_DIM) % 2 - 0.5))
    assert wait_until(lambda: sim_link.latest.accepted_commands == 150, 5.0), read_log(sim)
    assert sim.poll() is None, read_log(sim)


class Intruder:
    """Another sender on the command channel: valid commands numbered just above the robot's echo, at 200 Hz.

    Its commands carry ``utime`` 7, so the test tells them from the bridge's (wall-clock utime)."""

    UTIME = 7

    def __init__(self, link: SimRobotLink, position: np.ndarray):
        self.link, self.position, self.sent = link, position, 0
        self.last_sequence = -1  # of the newest command sent
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.005):
            self.last_sequence = self.link.latest.last_command_sequence + 1
            self.link.send(encode_command(self.position, self.last_sequence, utime=self.UTIME))
            self.sent += 1

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=2.0)


def test_row5_a_second_commander_is_detected_and_the_bridge_stops_until_rearmed(
        ros_node, start_process, repo_conftest, lcm_url, sim_link):
    wait_until, read_log, spin = repo_conftest.wait_until, repo_conftest.read_log, ros_node.spin_once
    sim = start_sim(start_process, lcm_url)
    assert wait_until(lambda: len(sim_link.states) > 10, 60.0), read_log(sim)
    home = sim_link.latest.position.copy()
    operator = Operator(ros_node, home)
    bridge = start_bridge(start_process, lcm_url, "-p", f"lcm.command_channel:={SIM_COMMAND}",
                          "-p", f"lcm.state_channel:={SIM_STATE}")

    def bridge_commands_after(monotonic: float) -> list:
        return [c for t, c in list(sim_link.commands) if t > monotonic and c.utime != Intruder.UTIME]

    # The robot follows the bridge: its echo is a command the bridge sent.
    assert wait_until(lambda: sim_link.latest.last_command_utime > 10**15, 60.0, spin=spin), read_log(bridge)
    intruder_pose = home.copy()
    intruder_pose[0] -= 0.3  # left shoulder, as in the issue
    intruder = Intruder(sim_link, intruder_pose)
    assert wait_until(lambda: any("second_commander" in f for f in operator.faults()), 10.0, spin=spin), read_log(bridge)
    detected = time.monotonic()
    fault = next(f for f in operator.faults() if "second_commander" in f)
    assert "that this bridge did not send" in fault and "/rynn/set_mode" in fault
    spin_for(ros_node, 0.5)
    assert bridge_commands_after(detected + 0.1) == []  # the bridge stopped commanding
    intruder.stop()
    # The robot has taken the other sender's last command (a starved robot process takes queued packets late:
    # rearming before that let it accept one more intruder command afterwards, a second commander again),
    # and its own watchdog holds once that sender is silent.
    assert wait_until(lambda: sim_link.latest.last_command_sequence == intruder.last_sequence, 10.0)
    assert wait_until(lambda: sim_link.latest.fault_flags & 1, 5.0)  # FAULT_WATCHDOG

    # The operator's way out: the other sender is gone; request real mode again.
    response = call_set_mode(operator, wait_until, operator.SetMode.Request.MODE_REAL)
    rearmed = time.monotonic()
    assert response.success and response.message.startswith("resuming real mode from the measured pose"), response.message
    assert wait_until(lambda: len(bridge_commands_after(rearmed)) > 50, 10.0, spin=spin), read_log(bridge)
    measured_at_rearm = next(s for t, s in reversed(list(sim_link.states)) if t <= rearmed).position
    first = motion(bridge_commands_after(rearmed))[0]
    assert np.abs(first.position - measured_at_rearm).max() < 0.02  # an approach from where the intruder left it
    assert wait_until(lambda: np.abs(sim_link.latest.position - home).max() < 0.02, 30.0, spin=spin), read_log(bridge)
    assert wait_until(lambda: not any("second_commander" in f for f in operator.faults()), 5.0, spin=spin)
    assert bridge.poll() is None and sim.poll() is None


def test_row10_commands_keep_flowing_under_an_lcm_flood(bridge_setup, ros_node, repo_conftest, lcm_url):
    robot, operator, bridge = bridge_setup
    wait_until, spin = repo_conftest.wait_until, ros_node.spin_once
    stale = state_packet(1, robot.position)  # well-formed, but its sequence went backwards: decoded and rejected

    def command_rate(start: float, end: float) -> tuple[float, float]:
        """(commands/s, largest gap [s]) of the commands the bridge sent in [start, end] (wall clock, its utime)."""
        utimes = np.array([c.utime * 1e-6 for c in list(robot.commands) if start < c.utime * 1e-6 < end])
        return (len(utimes) - 1) / (utimes[-1] - utimes[0]), np.diff(utimes).max()

    quiet = time.time()
    spin_for(ros_node, 2.0)
    quiet_rate, quiet_gap = command_rate(quiet, time.time())
    flood = HostileSender(lcm_url, lambda n: b"\x5a" * 700 if n % 2 else stale, 5000.0)  # 5k msgs/s for 3 s
    started = time.time()
    spin_for(ros_node, 3.0)
    flood.stop()
    rate, max_gap = command_rate(started + 0.2, time.time())
    # Compared with the same bridge just before (the machine is shared, so the bound is loose; rates and gaps
    # are measured by benchmarks/bench_bridge.py): commands keep flowing, no half-second gap (the issue saw 569 ms).
    figures = f"{rate:.0f} commands/s, max gap {max_gap * 1e3:.0f} ms (before the flood {quiet_rate:.0f}/s, " \
              f"{quiet_gap * 1e3:.0f} ms); flood {flood.sent} msgs"
    assert rate > 0.6 * quiet_rate and max_gap < max(0.3, 2 * quiet_gap), figures
    # A burst of 1000 packets at once fits the bridge's receive buffer (the OS default of ~208 KiB holds ~150):
    # every one is read and counted, none dropped unseen by the kernel.
    burst = lcm.LCM(lcm_url)
    wrong_length = encode_state(RobotState(0, 1, -1, 0, *(np.zeros(10),) * 3, 0, 0, 0, 0, 0, 0, 0, 0))
    for _ in range(1000):
        burst.publish(STATE_CHANNEL, wrong_length)
    assert wait_until(lambda: operator.diagnostic_value("rejected.lcm_state_wrong_length") == 1000, 20.0, spin=spin), \
        f"{operator.diagnostic_value('rejected.lcm_state_wrong_length')} of a burst of 1000 counted"
    new_target = operator.action.copy()
    new_target[7:10] -= 0.05
    operator.action = new_target
    assert wait_until(lambda: np.allclose(robot.position, new_target, atol=1e-9), 20.0, spin=spin), repo_conftest.read_log(bridge)
    assert not operator.ever_faulted("command_loop") and bridge.poll() is None
