"""The bridge's LCM endpoint over real UDP multicast, and the fixed-rate command thread."""

import os
import threading
import time
from pathlib import Path

import lcm
import numpy as np
import pytest

from rynn_robot_bridge.bridge.commander import RobotCommand
from rynn_robot_bridge.bridge.lcm_link import LcmRobotLink, receive_buffer_note, state_batch_interval_s, with_receive_buffer
from rynn_robot_bridge.bridge.rate_loop import FixedRateThread, next_deadline
from rynn_robot_bridge.lcm_protocol import MODE_HOLD, MODE_POSITION, NUM_JOINTS, RobotState, decode_command, encode_state


@pytest.fixture
def wait_until(request):
    """The repository conftest's ``wait_until`` (this directory's conftest shadows the module name)."""
    return request.config.pluginmanager.get_plugin(str(Path(__file__).resolve().parents[3] / "conftest.py")).wait_until


def robot_state(sequence: int, position) -> RobotState:
    position = np.asarray(position, dtype=np.float64)
    return RobotState(1, sequence, -1, 0, position, np.zeros_like(position), np.zeros_like(position), 0, 0, 0, 0, 0, 0, 0, 0)


def test_commands_go_out_numbered_and_valid_states_come_in(lcm_url, wait_until):
    states = []
    link = LcmRobotLink(lcm_url, "TEST_COMMAND", "TEST_STATE", lambda state, at: states.append((state, at)))
    robot = lcm.LCM(lcm_url)
    commands = []
    robot.subscribe("TEST_COMMAND", lambda _c, data: commands.append(decode_command(data)))
    link.start()
    try:
        target = np.linspace(-0.5, 0.5, NUM_JOINTS)
        link.send(RobotCommand(target, hold=False, sequence=41, utime=1000))
        link.send(RobotCommand(target, hold=True, sequence=42, utime=1005))
        assert wait_until(lambda: len(commands) == 2, 5.0, spin=lambda: robot.handle_timeout(20))
        move, hold = commands
        assert (move.sequence, move.utime, move.enable, move.mode) == (41, 1000, True, MODE_POSITION)
        assert (hold.sequence, hold.utime, hold.enable, hold.mode) == (42, 1005, False, MODE_HOLD)
        np.testing.assert_array_equal(move.position, target)

        robot.publish("TEST_STATE", encode_state(robot_state(7, target)))
        robot.publish("TEST_STATE", b"\x00garbage")
        robot.publish("TEST_STATE", encode_state(robot_state(8, target[:10])))
        assert wait_until(lambda: sum(link.rejected().values()) == 2 and states, 5.0)
        assert [s.sequence for s, _ in states] == [7]
        np.testing.assert_array_equal(states[0][0].position, target)
        assert link.rejected() == {"lcm_state_malformed": 1, "lcm_state_wrong_length": 1}
        assert link.commands_sent == 2
    finally:
        link.stop()


def test_deadlines_advance_by_one_period_and_skip_whole_missed_periods():
    assert next_deadline(1.0, now=1.001, period=0.005) == (1.005, 0)
    assert next_deadline(1.0, now=1.007, period=0.005) == (1.005, 0)  # late by less than a period: run at once
    deadline, skipped = next_deadline(1.0, now=1.052, period=0.005)  # a 52 ms overrun
    assert skipped == 9 and deadline == pytest.approx(1.05)


def test_fixed_rate_thread_ticks_at_its_rate(wait_until):
    ticks = []
    loop = FixedRateThread(200.0, ticks.append, name="test_rate")
    loop.start()
    assert wait_until(lambda: len(ticks) >= 100, 5.0)
    loop.stop()
    assert abs(np.median(np.diff(ticks)) - 0.005) < 0.0005


@pytest.mark.parametrize("returns, owed", [(True, True), (None, True), (False, False)])
def test_skipped_periods_are_missed_deadlines_only_after_a_cycle_that_owed_one(returns, owed, wait_until):
    """One cycle overruns by 30 ms, so ~6 periods get no cycle: missed deadlines where the cycle commanded (its
    tick returned anything but False), only skipped periods where it owed nothing (the bridge in digital mode)."""
    ticks = []

    def tick(now):
        ticks.append(now)
        if len(ticks) == 3:
            time.sleep(0.03)  # the overrun under test
        return returns

    loop = FixedRateThread(200.0, tick, name="test_owed")
    loop.start()
    assert wait_until(lambda: len(ticks) >= 10, 5.0)
    loop.stop()
    assert loop.skipped_periods >= 5
    assert loop.missed_deadlines == (loop.skipped_periods if owed else 0)


@pytest.mark.parametrize("priority", [0, 20])
def test_the_command_thread_runs_at_its_realtime_priority_or_says_why_not(priority, wait_until, fifo_allowed):
    policies = []
    loop = FixedRateThread(200.0, lambda now: policies.append(os.sched_getscheduler(0)), name="test_rt", realtime_priority=priority)
    loop.start()
    assert wait_until(lambda: len(policies) >= 5, 5.0)
    loop.stop()
    if priority == 0:
        assert set(policies) == {os.SCHED_OTHER} and loop.scheduling == "normal (realtime_priority 0)"
    elif fifo_allowed:
        assert set(policies) == {os.SCHED_FIFO} and loop.scheduling == "SCHED_FIFO priority 20"
    else:  # refused (no CAP_SYS_NICE): runs as a normal thread and says how to allow it
        assert set(policies) == {os.SCHED_OTHER} and "refused" in loop.scheduling and "CAP_SYS_NICE" in loop.scheduling
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # only the command thread, not its process


def test_the_link_names_its_receive_thread_once_started(lcm_url, wait_until):
    """``native_id`` is the thread states are handled on (the bridge schedules it by this id)."""
    handled_on = []
    link = LcmRobotLink(lcm_url, "TEST_COMMAND", "TEST_STATE", lambda state, at: handled_on.append(threading.get_native_id()))
    robot = lcm.LCM(lcm_url)
    link.start()
    try:
        assert link.native_id is not None and link.native_id != threading.get_native_id()
        robot.publish("TEST_STATE", encode_state(robot_state(1, np.zeros(NUM_JOINTS))))
        assert wait_until(lambda: handled_on, 5.0)
    finally:
        link.stop()
    assert handled_on == [link.native_id]


def test_states_taken_in_batches_all_arrive_in_order_and_the_thread_wakes_once_a_batch(lcm_url, wait_until):
    """``batch_interval_s`` (the bridge's digital mode): the states of a 500 Hz stream are taken in groups, one
    after another, with a pause between groups, and none is lost. Taken each as it comes, the same stream leaves
    no pause that long on an idle machine (a busy one may add some: this checks only that batching makes them)."""
    handled: list[tuple[int, float]] = []
    link = LcmRobotLink(lcm_url, "TEST_COMMAND", "TEST_STATE", lambda state, at: handled.append((state.sequence, at)))
    link.batch_interval_s = state_batch_interval_s(10.0)
    robot = lcm.LCM(lcm_url)
    link.start()
    try:
        position = np.zeros(NUM_JOINTS)
        for sequence in range(1, 501):  # 1 s at 500 Hz
            robot.publish("TEST_STATE", encode_state(robot_state(sequence, position)))
            time.sleep(0.002)
        assert wait_until(lambda: len(handled) == 500, 10.0), len(handled)
    finally:
        link.stop()
    assert [sequence for sequence, _ in handled] == list(range(1, 501))
    gaps = np.diff([at for _, at in handled])
    pauses = int((gaps >= 0.008).sum())  # between batches: the 10 ms sleep (a state comes every 2 ms)
    back_to_back = int((gaps < 0.0005).sum())  # within a batch: the states queued while the thread slept
    assert pauses >= 20 and back_to_back >= 250, (pauses, back_to_back)


def test_the_state_batch_interval_leaves_half_the_validators_arrival_slack():
    assert state_batch_interval_s(0.0) == 0.0 and state_batch_interval_s(10.0) == pytest.approx(0.01)
    for milliseconds in (10.5, -1.0):
        with pytest.raises(ValueError, match="digital_state_batch_ms must be within 0 and 10"):
            state_batch_interval_s(milliseconds)


def test_receive_buffer_option_is_added_to_udpm_urls_without_one():
    assert with_receive_buffer("udpm://239.255.76.67:7667?ttl=0", 2097152) == "udpm://239.255.76.67:7667?ttl=0&recv_buf_size=2097152"
    assert with_receive_buffer("udpm://239.255.76.67:7667", 4096) == "udpm://239.255.76.67:7667?recv_buf_size=4096"
    assert with_receive_buffer("udpm://h:1?recv_buf_size=99", 4096) == "udpm://h:1?recv_buf_size=99"  # the URL wins
    assert with_receive_buffer("memq://", 4096) == "memq://"


def test_receive_buffer_note_says_when_the_kernel_caps_the_request(tmp_path):
    rmem_max = tmp_path / "rmem_max"
    rmem_max.write_text("212992\n")
    note = receive_buffer_note("udpm://h:1?ttl=0&recv_buf_size=2097152", rmem_max)
    assert "caps it at 212992" in note and "sysctl -w net.core.rmem_max=2097152" in note
    rmem_max.write_text("4194304\n")
    assert receive_buffer_note("udpm://h:1?ttl=0&recv_buf_size=2097152", rmem_max) == \
        "LCM receive buffer: 2097152 bytes (net.core.rmem_max 4194304)"
    assert "OS default" in receive_buffer_note("udpm://h:1?ttl=0", rmem_max)


def test_a_failing_cycle_is_counted_reported_and_the_loop_keeps_running(wait_until):
    ticks, errors = [], []

    def tick(now):
        ticks.append(now)
        if len(ticks) == 3:
            raise RuntimeError("current position nan of DoF 0")

    loop = FixedRateThread(200.0, tick, name="test_guarded", on_error=errors.append)
    loop.start()
    try:
        assert wait_until(lambda: len(ticks) >= 20, 5.0)
        assert loop.errors == 1 and [str(e) for e in errors] == ["current position nan of DoF 0"]
        problem = loop.problem(loop.last_error_at, stall_after_s=1.0)
        assert problem == "test_guarded cycle failed 1 time(s), last: RuntimeError: current position nan of DoF 0"
        assert loop.problem(loop.last_error_at + 2.0, stall_after_s=10.0) is None
        assert "test_guarded loop stalled: no cycle for" in loop.problem(loop.last_cycle_at + 0.5, stall_after_s=0.25)
    finally:
        loop.stop()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the thread's death is the point
def test_a_loop_whose_error_handler_fails_is_reported_as_stopped(wait_until):
    def broken_handler(_error):
        raise RuntimeError("handler broke")

    loop = FixedRateThread(200.0, lambda now: 1 / 0, name="test_dead", on_error=broken_handler)
    loop.start()
    stopped = "test_dead loop stopped: ZeroDivisionError: division by zero"
    assert wait_until(lambda: loop.last_cycle_at is not None and loop.problem(loop.last_cycle_at, 1.0) == stopped, 5.0)


def test_a_burst_of_states_is_read_and_counted_not_dropped_by_lcm_or_the_kernel(lcm_url, wait_until):
    """LCM queues 30 messages per subscription by default and the OS buffer ~150 of these: both are sized up."""
    link = LcmRobotLink(with_receive_buffer(lcm_url, 2097152), "TEST_COMMAND", "TEST_STATE", lambda state, at: None)
    sender = lcm.LCM(lcm_url)
    short = encode_state(robot_state(1, np.zeros(10)))
    link.start()
    try:
        for _ in range(1000):
            sender.publish("TEST_STATE", short)
        assert wait_until(lambda: link.rejected().get("lcm_state_wrong_length") == 1000, 10.0), link.rejected()
    finally:
        link.stop()
