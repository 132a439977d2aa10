import numpy as np
import pytest

from rynn_retarget.action_layout import ACTION_DIM
from rynn_robot_bridge.lcm_protocol import JointCommand
from rynn_robot_bridge.robot_safety import CommandGate, Fault

LOWER, UPPER = -np.ones(ACTION_DIM), np.ones(ACTION_DIM)


def command(seq, value=0.1, utime=0, velocity=None, enable=True, mode=0, length=ACTION_DIM):
    return JointCommand(utime, seq, mode, enable, np.full(length, value), velocity)


@pytest.fixture
def gate():
    return CommandGate(LOWER, UPPER, watchdog_timeout_s=0.1, max_sequence_gap=2)


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
