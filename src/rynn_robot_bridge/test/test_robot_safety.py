import numpy as np
import pytest

from rynn_common.action_layout import ACTION_DIM
from rynn_robot_bridge.lcm_protocol import JointCommand
from rynn_robot_bridge.robot_safety import CommandEchoCheck, CommandGate, Fault, StateValidator

LOWER, UPPER, VELOCITY = -np.ones(ACTION_DIM), np.ones(ACTION_DIM), np.full(ACTION_DIM, 2.0)


def command(seq, value=0.1, utime=0, velocity=None, enable=True, mode=0, length=ACTION_DIM):
    return JointCommand(utime, seq, mode, enable, np.full(length, value), velocity)


@pytest.fixture
def gate():
    return CommandGate(LOWER, UPPER, VELOCITY, watchdog_timeout_s=0.1, max_sequence_gap=2)


def test_holds_measured_position_until_the_first_command(gate):
    measured = np.full(ACTION_DIM, 0.3)
    target, velocity = gate.joint_targets(measured)
    np.testing.assert_array_equal(target, measured)
    assert velocity is None and gate.fault_flags == Fault.WATCHDOG


def test_valid_command_is_tracked(gate):
    assert gate.submit(command(1, 0.5, utime=99), now=0.0) == Fault.NONE
    target, _ = gate.joint_targets(np.zeros(ACTION_DIM))
    np.testing.assert_array_equal(target, np.full(ACTION_DIM, 0.5))
    assert gate.fault_flags == Fault.NONE and gate.last_utime == 99


@pytest.mark.parametrize(
    "bad, fault, counter",
    [
        (command(2, length=53), Fault.WRONG_LENGTH, "rejected_wrong_length"),
        (command(2, velocity=np.zeros(10)), Fault.WRONG_LENGTH, "rejected_wrong_length"),
        (command(2, np.nan), Fault.NON_FINITE, "rejected_non_finite"),
        (command(2, velocity=np.full(ACTION_DIM, np.inf)), Fault.NON_FINITE, "rejected_non_finite"),
        (command(2, 1.5), Fault.JOINT_LIMIT, "rejected_joint_limit"),
        (command(1), Fault.SEQUENCE, "rejected_sequence"),
        (command(5), Fault.SEQUENCE, "rejected_sequence"),
    ],
)
def test_bad_commands_are_rejected_counted_and_keep_the_previous_target(gate, bad, fault, counter):
    gate.submit(command(1, 0.2), now=0.0)
    assert gate.submit(bad, now=0.01) == fault
    assert getattr(gate.counters, counter) == 1
    assert gate.fault_flags == fault
    np.testing.assert_array_equal(gate.joint_targets(np.zeros(ACTION_DIM))[0], np.full(ACTION_DIM, 0.2))
    assert gate.submit(command(2, 0.3), now=0.02) == Fault.NONE  # the next good command clears the flag
    assert gate.fault_flags == Fault.NONE


def test_gap_within_threshold_is_accepted(gate):
    gate.submit(command(1), now=0.0)
    assert gate.submit(command(4), now=0.01) == Fault.NONE  # two commands lost, max_sequence_gap=2


def test_malformed_packets_are_counted(gate):
    gate.reject_malformed()
    gate.reject_malformed()
    assert gate.counters.rejected_malformed == 2 and gate.fault_flags & Fault.MALFORMED


def test_watchdog_holds_the_measured_position_then_recovers_with_any_sequence(gate):
    gate.submit(command(10, 0.5), now=0.0)
    gate.update(0.09)
    assert not gate.holding
    gate.update(0.11)
    assert gate.holding and gate.fault_flags & Fault.WATCHDOG and gate.counters.watchdog_trips == 1
    measured = np.full(ACTION_DIM, 0.42)
    np.testing.assert_array_equal(gate.joint_targets(measured)[0], measured)
    np.testing.assert_array_equal(gate.joint_targets(measured + 0.1)[0], measured)  # latched, no drift
    assert gate.submit(command(0, 0.6), now=0.2) == Fault.NONE  # a restarted sender is the new baseline
    assert not gate.holding and gate.fault_flags == Fault.NONE
    gate.update(0.25)
    assert gate.counters.watchdog_trips == 1


def test_rejected_commands_do_not_feed_the_watchdog(gate):
    gate.submit(command(1), now=0.0)
    for i in range(20):
        gate.submit(command(2, np.nan), now=0.01 * i)
        gate.update(0.01 * i)
    assert gate.fault_flags & Fault.WATCHDOG


def test_disable_and_hold_mode_hold_position(gate):
    gate.submit(command(1, 0.5), now=0.0)
    gate.submit(command(2, 0.5, enable=False), now=0.01)
    measured = np.full(ACTION_DIM, 0.1)
    assert gate.fault_flags == Fault.DISABLED
    np.testing.assert_array_equal(gate.joint_targets(measured)[0], measured)
    gate.submit(command(3, 0.5, mode=1), now=0.02)
    assert gate.holding
    gate.submit(command(4, 0.5), now=0.03)
    assert not gate.holding


def test_feedforward_passes_through(gate):
    gate.submit(command(1, 0.2, velocity=np.full(ACTION_DIM, 0.7)), now=0.0)
    np.testing.assert_array_equal(gate.joint_targets(np.zeros(ACTION_DIM))[1], np.full(ACTION_DIM, 0.7))


@pytest.mark.parametrize("bad, fault, counter", [
    (command(2, velocity=np.full(ACTION_DIM, 1e4)), Fault.JOINT_LIMIT, "rejected_joint_limit"),  # issue 17 row 4
    (command(2, velocity=np.where(np.arange(ACTION_DIM) == 5, -2.5, 0.0)), Fault.JOINT_LIMIT, "rejected_joint_limit"),
    (command(2, mode=7), Fault.MALFORMED, "rejected_malformed"),
])
def test_feedforward_beyond_the_velocity_limit_and_unknown_modes_are_rejected(gate, bad, fault, counter):
    gate.submit(command(1, 0.2), now=0.0)
    assert gate.submit(bad, now=0.01) == fault and getattr(gate.counters, counter) == 1
    target, velocity = gate.joint_targets(np.zeros(ACTION_DIM))
    np.testing.assert_array_equal(target, np.full(ACTION_DIM, 0.2))
    assert velocity is None
    assert gate.submit(command(2, 0.2, velocity=np.full(ACTION_DIM, 2.0)), now=0.02) == Fault.NONE  # at the limit: ok


def test_gate_refuses_limits_of_the_wrong_size_or_without_a_positive_velocity():
    with pytest.raises(ValueError, match="joint limits need 54 entries"):
        CommandGate(LOWER, UPPER, np.ones(3))
    with pytest.raises(ValueError, match="velocity limits must be positive"):
        CommandGate(LOWER, UPPER, np.zeros(ACTION_DIM))


# --- the bridge's state validator and echo check ------------------------------------------------


@pytest.fixture
def validator():
    return StateValidator(LOWER, UPPER, VELOCITY, position_margin_rad=0.1, velocity_factor=2.0, stale_after_s=0.1)


def state(value=0.0, velocity=0.0, effort=0.0, length=ACTION_DIM):
    return np.full(length, value), np.full(length, velocity), np.full(length, effort)


@pytest.mark.parametrize("bad, fault", [
    (state(length=20), Fault.WRONG_LENGTH),
    (state(np.nan), Fault.NON_FINITE),
    (state(effort=np.inf), Fault.NON_FINITE),
    (state(1.2), Fault.JOINT_LIMIT),  # beyond the limit + margin
    (state(velocity=4.5), Fault.JOINT_LIMIT),  # above 2 x the 2 rad/s limit
    (state(0.2), Fault.JOINT_LIMIT),  # 0.2 rad in 10 ms: ~20 rad/s implied
])
def test_state_validator_rejects_and_counts_and_keeps_the_fault_for_the_hold_time(validator, bad, fault):
    assert validator.check(*state(0.0), sequence=1, now=0.0) == Fault.NONE
    assert validator.check(*bad, sequence=2, now=0.01) == fault
    assert validator.counters.accepted_states == 1 and sum(vars(validator.counters).values()) == 2
    assert "robot state rejected" in validator.problem(0.05, hold_s=0.1)
    assert validator.problem(0.12, hold_s=0.1) is None
    assert validator.check(*state(1.05), sequence=3, now=0.6) == Fault.NONE  # within the margin, after a restart


def test_echo_check_tells_our_commands_from_anothers():
    check = CommandEchoCheck(history=3)
    assert check.check(41, 7, now=0.0) is None  # before we sent anything: the baseline
    for sequence in range(100, 105):
        check.sent(sequence, sequence * 10)
    assert check.check(104, 1040, now=0.0) is None and check.check(100, 999, now=0.0) is None  # ours; 100 is older than the history
    assert "did not send" in check.check(104, 1, now=0.0)  # our number, another sender's utime
    assert "did not send" in check.check(105, 1050, now=0.0)  # above anything we sent
    assert "did not send" in check.check(42, 7, now=0.0)  # a lower sequence the robot accepted while we were stale
    assert check.check(41, 7, now=0.0) is None
    check.check(42, 7, now=0.0)
    check.rebaseline(now=1.0)
    assert check.check(42, 7, now=1.0) is None


def test_after_a_rearm_echoes_still_in_flight_are_not_a_second_commander_but_a_new_one_is():
    """The bridge re-armed having read the other sender's echo 42; states with its later commands 43, 44 were
    already queued (a starved bridge reads them after the re-arm): they are the old conflict, not a new one.
    Once the robot echoes a command of ours, or the grace has passed, any foreign echo is a fault again."""
    check = CommandEchoCheck(grace_s=1.0)
    check.check(41, 7, now=0.0)
    check.sent(100, 1000)
    check.check(42, 7, now=0.1)
    check.rebaseline(now=0.2)
    assert check.check(43, 7, now=0.3) is None and check.check(44, 7, now=0.4) is None
    check.sent(101, 1010)
    assert check.check(101, 1010, now=0.5) is None  # the robot follows us again
    assert "did not send" in check.check(102, 7, now=0.6)  # within the grace, but after our echo
    late = CommandEchoCheck(grace_s=1.0)
    late.check(41, 7, now=0.0)
    late.rebaseline(now=0.2)
    assert late.check(42, 7, now=1.1) is None
    assert "did not send" in late.check(43, 7, now=1.3)  # a sender still commanding after the grace
