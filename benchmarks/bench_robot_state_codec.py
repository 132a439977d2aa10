"""CPU per robot state on the LCM link (500 a second): lcm-gen's robot_state_t class vs the array codec.

The simulated robot encodes and the bridge decodes every 54-joint state. Before, both went through the
generated ``robot_state_t`` (a Python float per joint value, packed and unpacked one by one); now
``rynn_robot_bridge.lcm_protocol`` reads and writes the arrays in one step each. Both are timed here on
the same states, interleaved state by state (``time.thread_time``: independent of how busy the machine is).

    .venv/bin/python benchmarks/bench_robot_state_codec.py [--states 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_robot_bridge")]

from rynn_robot_bridge.lcm_protocol import NUM_JOINTS, RobotState, decode_state, encode_state
from rynn_robot_bridge.lcm_types.rynn_lcm import robot_state_t

COUNTERS = ("fault_flags", "accepted_commands", "rejected_malformed", "rejected_wrong_length", "rejected_non_finite",
            "rejected_joint_limit", "rejected_sequence", "watchdog_trips")


def encode_generated(state: RobotState) -> bytes:
    """What encode_state did: the generated class filled with Python floats."""
    msg = robot_state_t()
    for name in ("utime", "sequence", "last_command_sequence", "last_command_utime", *COUNTERS):
        setattr(msg, name, int(getattr(state, name)))
    msg.num_joints = len(state.position)
    msg.position = [float(v) for v in state.position]
    msg.velocity = [float(v) for v in state.velocity]
    msg.effort = [float(v) for v in state.effort]
    return msg.encode()


def decode_generated(packet: bytes) -> RobotState:
    """What decode_state did: the generated class's decode, then arrays."""
    msg = robot_state_t.decode(bytes(packet))
    return RobotState(
        **{name: getattr(msg, name) for name in RobotState.__dataclass_fields__ if name not in ("position", "velocity", "effort")},
        position=np.asarray(msg.position, dtype=np.float64),
        velocity=np.asarray(msg.velocity, dtype=np.float64),
        effort=np.asarray(msg.effort, dtype=np.float64),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    rng = np.random.default_rng(0)
    states = [RobotState(i, i, i - 1, i, *rng.normal(size=(3, NUM_JOINTS)), 0, i, 0, 0, 0, 0, 0, 0)
              for i in range(options.states)]
    packets = [encode_state(state) for state in states]
    assert all(packet == encode_generated(state) for packet, state in zip(packets, states))
    print(f"{options.states} states of {NUM_JOINTS} joints per repeat; {os.cpu_count()} cores, "
          f"load avg {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    variants = {"lcm-gen class": (encode_generated, decode_generated), "array codec": (encode_state, decode_state)}
    for repeat in range(options.repeats):
        cpu = {label: [0.0, 0.0] for label in variants}
        for i, (state, packet) in enumerate(zip(states, packets)):
            for label, (encode, decode) in (variants.items() if i % 2 else reversed(variants.items())):
                start = time.thread_time()
                encode(state)
                middle = time.thread_time()
                decode(packet)
                cpu[label][0] += middle - start
                cpu[label][1] += time.thread_time() - middle
        per = 1e6 / options.states
        print(f"repeat {repeat}: " + "; ".join(f"{label}: encode {e * per:5.1f}, decode {d * per:5.1f} us"
                                               for label, (e, d) in cpu.items()) + " per state", flush=True)


if __name__ == "__main__":
    main()
