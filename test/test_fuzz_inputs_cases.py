"""The input fuzzer's cases (scripts/fuzz_inputs.py) without a graph: every hostile kind is made for the
graph's message types, each structured case serializes (it can be sent), and the malformed ones do not deserialize."""

from __future__ import annotations

import importlib.util
import math
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fuzz_inputs.py"


@pytest.fixture(scope="module")
def fuzz():
    spec = importlib.util.spec_from_file_location("fuzz_inputs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_inputs"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_cases_cover_every_hostile_kind_and_can_be_sent(fuzz):
    from rclpy.serialization import serialize_message
    from rynn_teleop_msgs.msg import RobotAction
    from sensor_msgs.msg import Image, JointState

    from rynn_common.cdr import deserialize

    state = JointState(name=["a", "b"], position=[0.1, 0.2])
    state.header.frame_id = "base_link"
    now = time.time()
    names = {case.name: case for case in fuzz.cases_for(state, serialize_message(state), 0, now)}
    for expected in ("header.stamp a day ahead", "header.stamp 1970", "header.frame_id wrong", "header.frame_id 64 KiB",
                     "name empty", "position empty", f"position huge ({fuzz.HUGE_ELEMENTS})", "position one short",
                     "position[0]=nan", "position[0]=inf", "position all 1000", "cdr empty", "cdr cut in half"):
        assert expected in names, sorted(names)
    assert math.isnan(names["position[0]=nan"].message.position[0])
    assert names["header.stamp a day ahead"].message.header.stamp.sec >= int(now) + fuzz.DAY_S
    for case in names.values():
        if case.raw is None:
            serialize_message(case.message)  # structurally valid: rclpy sends it
    for case in (names["cdr empty"], names["cdr header only"], names["cdr cut in half"]):
        with pytest.raises(ValueError):
            deserialize(case.raw, JointState)

    image = Image(height=2, width=2, encoding="rgb8", step=6, data=bytes(12))
    image_cases = {c.name for c in fuzz.cases_for(image, serialize_message(image), 0, now)}
    assert {"encoding bogus", "encoding 32FC1", f"data huge ({fuzz.HUGE_BYTES})", "data one short", "height=4294967295"} <= image_cases

    action = RobotAction(positions=[0.0] * 54)
    action_cases = {c.name for c in fuzz.cases_for(action, serialize_message(action), 0, now)}
    assert {"positions[0]=nan", "positions all 1000"} <= action_cases
