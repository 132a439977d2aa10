"""Issue 34: the clock the operator nodes stamp with steps back mid-session, across processes.

Tracker, glove and retarget nodes run as their own processes on ROS time that this test drives
(``use_sim_time``, /clock published by the test at ~100 Hz): the clock every node reads, stepped
back ten minutes at once as NTP or an operator would step the system clock. Before, every tracker
sample after the step looked older than the last one before it: the retarget node dropped them
all as out of order and its skeleton stream stopped for the ten minutes. Now the stream carries on,
stamped on the new clock.
"""

from __future__ import annotations

import time

import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy

from ros_test_tools import read_log, wait_until

pytestmark = pytest.mark.ros

SIM_TIME = ["--ros-args", "-p", "use_sim_time:=true"]
SOURCE_ARGS = ["-p", "source:=synthetic", "-p", "synthetic.motion:=grasp"]
START_S = 1_790_000_000.0
STEP_S = -600.0
SKELETONS_AFTER = 30


def test_a_clock_stepped_back_does_not_stop_the_skeleton_stream(ros_node, start_process):
    from rosgraph_msgs.msg import Clock
    from rynn_teleop_msgs.msg import BimanualSkeleton

    procs = [
        start_process(["-m", "rynn_retarget.nodes.tracker_node", *SIM_TIME, *SOURCE_ARGS], "tracker"),
        start_process(["-m", "rynn_retarget.nodes.glove_node", *SIM_TIME, *SOURCE_ARGS], "glove"),
        start_process(["-m", "rynn_retarget.nodes.retarget_node", *SIM_TIME], "retarget"),
    ]
    logs = lambda: "\n".join(read_log(p)[-3000:] for p in procs)  # noqa: E731
    clock_pub = ros_node.create_publisher(Clock, "/clock", 10)
    offset = [START_S - time.monotonic()]

    def spin() -> None:
        """The test's clock, published each time round (~100 Hz), and this node's callbacks."""
        seconds = time.monotonic() + offset[0]
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = int(seconds), int(seconds % 1 * 1e9)
        clock_pub.publish(msg)
        ros_node.spin_once(0.01)

    skeletons: list[float] = []
    ros_node.create_subscription(
        BimanualSkeleton, "/rynn/operator/skeleton_camera",
        lambda m: skeletons.append(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9),
        QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE))

    assert wait_until(lambda: len(skeletons) > 20, 90.0, spin=spin), logs()
    before = len(skeletons)
    assert abs(skeletons[-1] - (time.monotonic() + offset[0])) < 5.0, "skeletons are not stamped on the test's clock"

    offset[0] += STEP_S  # every node's clock goes back ten minutes
    stepped_to = time.monotonic() + offset[0]

    def after_step() -> int:
        return sum(1 for stamp in skeletons[before:] if stamp < stepped_to + 60.0)

    assert wait_until(lambda: after_step() >= SKELETONS_AFTER, 60.0, spin=spin), (
        f"{after_step()} skeletons stamped on the new clock after the step\n{logs()}")
    assert all(proc.poll() is None for proc in procs), logs()
    assert "clock stepped back" in read_log(procs[2]), read_log(procs[2])[-2000:]
