"""One long-lived caller of the recorder's services across SIGKILLs and restarts of the recorder
process, as the operator console, the demo and the soak hold theirs (issue 17, the soak's
"/rynn/recorder/start did not answer within 120 s" after a recorder_kill).

Right after a restart the dead recorder's endpoints are still in the DDS graph, so the client finds
the service at once and a request written before the new recorder's reader matched is lost; with a
plain rclpy client (one request, waited for) 3 of 5 starts right after a restart went unanswered.
rynn_common.service_calls sends it again: every call must be answered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ros_test_tools import read_log, wait_for_log
from rynn_common.service_calls import node_service_caller

pytestmark = pytest.mark.ros

RESTARTS = 4
CALL_TIMEOUT_S = 120.0  # the soak's: a starved recorder answers late, a lost request never


def start_recorder(start_process, config: Path, name: str):
    return start_process(["-m", "rynn_robot_bridge.nodes.recorder_node", "--ros-args", "-p", f"config_file:={config}"],
                         name)


def test_a_long_lived_caller_gets_every_answer_across_recorder_restarts(tmp_path, start_process, ros_node):
    from std_srvs.srv import Trigger

    from rynn_common.ros_names import RECORDER_SERVICES

    config = tmp_path / "recorder.yaml"
    config.write_text(yaml.safe_dump({"output_dir": str(tmp_path / "recordings"), "flush_period_s": 0.3,
                                      "topics": ["/rynn/mode std_msgs/msg/String"], "latched_topics": ["/rynn/mode"]}))
    callers = {verb: node_service_caller(ros_node, Trigger, RECORDER_SERVICES[verb]) for verb in ("start", "stop")}

    def call(verb: str, recorder):
        resent = callers[verb].resent
        answer = callers[verb].call(Trigger.Request(), ros_node.spin_once, CALL_TIMEOUT_S)
        # What went wrong must be readable from CI's output: how often the request went again, the recorder's log.
        context = f"(resent {callers[verb].resent - resent} times)\n{read_log(recorder)}"
        assert answer is not None, f"{verb} not answered within {CALL_TIMEOUT_S:g} s {context}"
        assert answer.success, f"{verb} refused: {answer.message} {context}"
        return answer

    started_episodes = []
    for restart in range(RESTARTS + 1):
        recorder = start_recorder(start_process, config, f"recorder_{restart}")
        assert wait_for_log(recorder, "recorder up"), read_log(recorder)
        started = call("start", recorder)  # at once: the moment the soak and an operator call it after a respawn
        started_episodes.append(Path(started.message).name)
        if restart % 2:  # every other episode stopped before the kill, the rest recovered by the next recorder
            stopped = call("stop", recorder)
            assert json.loads(stopped.message)["episode"] == started_episodes[-1], stopped.message
        recorder.kill()
        recorder.wait(timeout=CALL_TIMEOUT_S)

    assert started_episodes == [f"episode_{index:04d}" for index in range(RESTARTS + 1)]
    print(f"requests resent: start {callers['start'].resent}, stop {callers['stop'].resent}")
