import struct

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


def generated_state(packet: bytes):
    """robot_state_t's own decode (lcm-gen), or None where it refuses the packet."""
    try:
        return robot_state_t.decode(packet)
    except (ValueError, struct.error, OverflowError, MemoryError, TypeError):
        return None


@pytest.mark.parametrize("joints", [0, 1, NUM_JOINTS, 60])
def test_state_bytes_are_lcm_gen_s_both_ways(joints):
    """The array codec writes the generated class's bytes and reads every packet as it does, refusing the same."""
    rng = np.random.default_rng(joints)
    for _ in range(20):
        arrays = rng.normal(scale=3.0, size=(3, joints))
        counters = rng.integers(-2**62, 2**62, size=11).tolist()
        state = RobotState(*counters[:4], *arrays, int(rng.integers(-2**31, 2**31)), *counters[4:])
        msg = robot_state_t()
        for name in ("utime", "sequence", "last_command_sequence", "last_command_utime", "fault_flags", "accepted_commands",
                     "rejected_malformed", "rejected_wrong_length", "rejected_non_finite", "rejected_joint_limit",
                     "rejected_sequence", "watchdog_trips"):
            setattr(msg, name, getattr(state, name))
        msg.num_joints = joints
        msg.position, msg.velocity, msg.effort = (a.tolist() for a in arrays)
        packet = encode_state(state)
        assert packet == msg.encode()
        for variant in (packet, packet + b"\x01\x02", *(packet[:cut] for cut in range(0, len(packet), 7)),
                        packet[:40] + b"\xff\xff\xff\xf0" + packet[44:], packet[:40] + b"\x7f\xff\xff\xff" + packet[44:],
                        bytes([packet[0] ^ 1]) + packet[1:]):
            expected = generated_state(variant)
            if expected is None:
                with pytest.raises(MalformedPacket):
                    decode_state(variant)
                continue
            decoded = decode_state(variant)
            for name in RobotState.__dataclass_fields__:
                value = getattr(decoded, name)
                if name in ("position", "velocity", "effort"):
                    assert value.dtype == np.float64 and value.tolist() == list(getattr(expected, name))
                else:
                    assert value == getattr(expected, name) and type(value) is int, name
    with pytest.raises(struct.error):
        encode_state(RobotState(0, 0, 0, 0, np.zeros(3), np.zeros(2), np.zeros(3), 0, 0, 0, 0, 0, 0, 0, 0))
