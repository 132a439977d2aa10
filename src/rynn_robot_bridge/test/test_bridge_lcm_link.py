"""The bridge's LCM endpoint over real UDP multicast, and the fixed-rate command thread."""

from pathlib import Path

import lcm
import numpy as np
import pytest

from rynn_robot_bridge.bridge.commander import RobotCommand
from rynn_robot_bridge.bridge.lcm_link import LcmRobotLink
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
        link.send(RobotCommand(target, hold=False))
        link.send(RobotCommand(target, hold=True))
        assert wait_until(lambda: len(commands) == 2, 5.0, spin=lambda: robot.handle_timeout(20))
        move, hold = commands
        assert (move.sequence, move.enable, move.mode) == (1, True, MODE_POSITION)
        assert (hold.sequence, hold.enable, hold.mode) == (2, False, MODE_HOLD)
        np.testing.assert_array_equal(move.position, target)

        robot.publish("TEST_STATE", encode_state(robot_state(7, target)))
        robot.publish("TEST_STATE", b"\x00garbage")
        robot.publish("TEST_STATE", encode_state(robot_state(8, target[:10])))
        assert wait_until(lambda: sum(link.rejected.values()) == 2 and states, 5.0)
        assert [s.sequence for s, _ in states] == [7]
        np.testing.assert_array_equal(states[0][0].position, target)
        assert link.rejected == {"lcm_state_malformed": 1, "lcm_state_wrong_length": 1}
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
