"""A short run of the input fuzzer (scripts/fuzz_inputs.py) against the running graph, start to verdict:
every input is fuzzed, and the graph survives it (nodes alive, commands within the joint limits, the mode
switch works, the last recording stops into a bag that reads back)."""

from __future__ import annotations

import json
import subprocess

import pytest

from ros_test_tools import read_log
from rynn_common import ros_names

pytestmark = [pytest.mark.ros, pytest.mark.slow]

# Start-up (the graph's imports) on two cores that other jobs load can take minutes; pytest.ini's 600 s is the backstop.
RUN_TIMEOUT_S = 540.0
# Every topic some node of the default graph reads (the console reads only while a browser is connected).
INPUTS = {
    ros_names.IMAGE_TOPIC, ros_names.CAMERA_INFO_TOPIC, ros_names.JOINT_STATES_TOPIC, ros_names.ACTION_TOPIC,
    ros_names.MODE_TOPIC, ros_names.STATUS_TOPIC, ros_names.TF_TOPIC, ros_names.TF_STATIC_TOPIC,
    ros_names.ROBOT_DESCRIPTION_TOPIC, ros_names.REAL_IMAGE_TOPIC, ros_names.REAL_CAMERA_INFO_TOPIC,
    ros_names.DIGITAL_IMAGE_TOPIC, ros_names.DIGITAL_CAMERA_INFO_TOPIC, ros_names.HANDS_TOPIC,
    ros_names.CAMERA_SKELETON_TOPIC,
}


def test_the_graph_survives_a_short_fuzz_of_every_input(start_process, tmp_path):
    out = tmp_path / "fuzz"
    # Its own DDS domain: start_process passes this session's claimed ROS_DOMAIN_ID (node_env), which the
    # fuzzer keeps; it binds a free UDP port for its LCM channel.
    fuzzer = start_process(["scripts/fuzz_inputs.py", "--out", str(out), "--repeat", "1", "--rate", "100",
                            "--settle", "0.5", "--baseline", "3"], "fuzz_inputs")
    try:
        fuzzer.wait(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the fuzzer did not finish in {RUN_TIMEOUT_S:.0f} s:\n{read_log(fuzzer)[-4000:]}")
    log = read_log(fuzzer)
    assert fuzzer.returncode == 0, log[-4000:]
    assert "\nPASS (" in log, log[-4000:]

    report = json.loads((out / "fuzz_report.json").read_text())
    checks = report["checks"]
    assert report["failures"] == [], report["failures"]
    assert checks["nodes_alive"] is True and checks["dead"] == [], checks
    assert checks["mode_switch"] == {"digital": True, "real": True}, checks
    assert checks["last_recording_stopped"] is True and checks["last_recording_readable"] is True, checks
    assert checks["last_recording"]["topics"].get(ros_names.JOINT_STATES_TOPIC, 0) > 0, checks
    assert checks["commands_seen"] > 0, checks
    assert checks["commands_outside_limits"] == [], checks

    fuzzed = {entry["input"]: entry for entry in report["inputs"]}
    assert INPUTS <= set(fuzzed), sorted(INPUTS - set(fuzzed))
    for topic, entry in fuzzed.items():
        assert entry["messages"] > 0 and entry["messages"] + entry["unsendable"] == entry["cases"], (topic, entry)
        assert entry["dead_after"] == [], (topic, entry)
    assert all(service["answer"] is not None for service in report["services"]), report["services"]
