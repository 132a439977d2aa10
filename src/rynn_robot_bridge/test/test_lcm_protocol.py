import numpy as np
import pytest

from rynn_robot_bridge.config import load_robot_config
from rynn_robot_bridge.lcm_protocol import (
    NUM_JOINTS,
    MalformedPacket,
    RobotState,
    decode_command,
    decode_state,
    encode_command,
    encode_state,
)
from rynn_robot_bridge.lcm_types.rynn_lcm import robot_state_t
from rynn_robot_bridge.robot_safety import Fault


def test_command_round_trip_keeps_values_and_optional_feedforward():
    target = np.linspace(-1, 1, NUM_JOINTS)
    decoded = decode_command(encode_command(target, sequence=7, utime=123, velocity_feedforward=-target))
    assert (decoded.sequence, decoded.utime, decoded.enable) == (7, 123, True)
    np.testing.assert_array_equal(decoded.position, target)
    np.testing.assert_array_equal(decoded.velocity_feedforward, -target)
    assert decode_command(encode_command(target, sequence=8)).velocity_feedforward is None


@pytest.mark.parametrize("cut", [0, 1, 8, 20, 100, -1])
def test_truncated_or_foreign_packets_raise_malformed(cut):
    packet = encode_command(np.zeros(NUM_JOINTS), sequence=1)
    with pytest.raises(MalformedPacket):
        decode_command(packet[:cut])


def test_state_packet_is_not_a_command():
    state = RobotState(1, 2, 3, 4, *(np.zeros(NUM_JOINTS),) * 3, 0, 0, 0, 0, 0, 0, 0, 0)
    with pytest.raises(MalformedPacket):
        decode_command(encode_state(state))


def test_state_round_trip():
    pos = np.arange(NUM_JOINTS) * 0.01
    state = RobotState(10, 11, 12, 13, pos, -pos, 2 * pos, int(Fault.WATCHDOG | Fault.SEQUENCE), 5, 1, 2, 3, 4, 6, 7)
    assert decode_state(encode_state(state)).rejected_sequence == 6
    np.testing.assert_array_equal(decode_state(encode_state(state)).effort, 2 * pos)


def test_fault_bits_match_the_lcm_definition():
    for fault in Fault:
        assert getattr(robot_state_t, f"FAULT_{fault.name}") == fault.value


def test_config_file_has_the_paper_timing_and_default_url():
    config = load_robot_config()
    assert config.lcm.url == "udpm://239.255.76.67:7667?ttl=0"
    assert config.lcm.command_rate_hz == 200.0 and config.controller.control_rate_hz == 500.0


def test_config_rejects_unknown_keys(tmp_path):
    bad = tmp_path / "robot.yaml"
    bad.write_text("lcm:\n  urll: x\n")
    with pytest.raises(ValueError, match="urll"):
        load_robot_config(bad)
