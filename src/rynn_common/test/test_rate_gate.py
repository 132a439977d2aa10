"""The fixed-rate gate shared by the operator nodes' DDS copies and the bridge's /joint_states."""

import pytest

from rynn_common.rate_gate import RateGate


def test_the_gate_keeps_its_phase_lets_no_late_event_pull_the_next_forward_and_makes_no_burst():
    gate = RateGate(0.1, start_s=0.0)
    times = [0.0, 0.03, 0.1, 0.12, 0.205, 0.29, 0.31, 1.0, 1.01, 1.05, 1.1]
    assert [t for t in times if gate.due(t)] == [0.0, 0.1, 0.205, 0.31, 1.0, 1.1]


@pytest.mark.parametrize("start_s", [float("-inf"), 5.0])
def test_the_first_event_goes_through_and_a_zero_interval_lets_every_one_through(start_s):
    assert RateGate(0.5, start_s).due(5.0)
    every = RateGate(0.0, start_s)
    assert all(every.due(t) for t in (5.0, 5.0, 5.001, 7.0))
