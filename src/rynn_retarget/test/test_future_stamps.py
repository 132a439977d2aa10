"""Issue 17 row 7: a /tf sample stamped a day ahead must not latch the retarget node.

Tracker, glove and retarget nodes run as their own processes over DDS; this test is
the hostile publisher. Before the fix the node took the bad stamp as its high-water
mark: every later tracker sample looked old, the skeleton stream stopped for good and
the bad samples themselves went out stamped a day ahead. Now each bad message is
rejected (counted by reason, logged), the stream keeps flowing and every output stamp
stays near the receiver's clock.
"""

from __future__ import annotations

import copy

import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy

from ros_test_tools import read_log, wait_until, watch_reject_counters

pytestmark = pytest.mark.ros

RELIABLE = QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE)
SOURCE_ARGS = ["-p", "source:=synthetic", "-p", "synthetic.motion:=grasp"]
ONE_DAY_NS = 86_400 * 10**9
BAD_MESSAGES = 5
SKELETONS_AFTER = 30  # ~0.5 s of the stream when idle; seconds on a loaded machine


def stamp_ns(stamp) -> int:
    return stamp.sec * 10**9 + stamp.nanosec


def shifted(stamp, offset_ns: int):
    total = stamp_ns(stamp) + offset_ns
    result = copy.copy(stamp)
    result.sec, result.nanosec = total // 10**9, total % 10**9
    return result


def test_a_day_ahead_on_tf_and_hands_is_rejected_and_the_stream_keeps_flowing(ros_node, start_process):
    from rynn_teleop_msgs.msg import BimanualSkeleton
    from tf2_msgs.msg import TFMessage

    procs = [
        start_process(["-m", "rynn_retarget.nodes.tracker_node", "--ros-args", *SOURCE_ARGS], "tracker"),
        start_process(["-m", "rynn_retarget.nodes.glove_node", "--ros-args", *SOURCE_ARGS], "glove"),
        start_process(["-m", "rynn_retarget.nodes.retarget_node"], "retarget"),
    ]
    logs = lambda: "\n".join(read_log(p)[-3000:] for p in procs)  # noqa: E731
    now_ns = lambda: ros_node.get_clock().now().nanoseconds  # noqa: E731

    skeletons: list[tuple[int, int]] = []  # (stamp, received) in ns
    latest: dict[str, object] = {}
    ros_node.create_subscription(
        BimanualSkeleton, "/rynn/operator/skeleton_camera",
        lambda m: skeletons.append((stamp_ns(m.header.stamp), now_ns())), RELIABLE,
    )
    ros_node.create_subscription(TFMessage, "/tf", lambda m: latest.__setitem__("tf", m), RELIABLE)
    ros_node.create_subscription(BimanualSkeleton, "/rynn/operator/hands", lambda m: latest.__setitem__("hands", m), RELIABLE)

    counters = watch_reject_counters(ros_node, "retarget_node", RELIABLE)
    tf_pub = ros_node.create_publisher(TFMessage, "/tf", RELIABLE)
    hands_pub = ros_node.create_publisher(BimanualSkeleton, "/rynn/operator/hands", RELIABLE)

    # The pipeline is up: skeletons flow and we have a real tracker and hand sample to copy.
    assert wait_until(lambda: len(skeletons) > 20 and {"tf", "hands"} <= latest.keys(), 90.0, spin=ros_node.spin_once), logs()
    assert wait_until(lambda: tf_pub.get_subscription_count() > 0 and hands_pub.get_subscription_count() > 0,
                      20.0, spin=ros_node.spin_once)

    # Five tracker samples and five hand skeletons, well-formed but stamped a day ahead.
    injected_ns = now_ns()
    for _ in range(BAD_MESSAGES):
        bad_tf = copy.deepcopy(latest["tf"])
        for transform in bad_tf.transforms:
            transform.header.stamp = shifted(ros_node.get_clock().now().to_msg(), ONE_DAY_NS)
        tf_pub.publish(bad_tf)
        bad_hands = copy.deepcopy(latest["hands"])
        bad_hands.header.stamp = shifted(ros_node.get_clock().now().to_msg(), ONE_DAY_NS)
        hands_pub.publish(bad_hands)
        ros_node.spin_once(0.01)

    # 1. The skeleton stream keeps flowing after the bad samples (before the fix: none ever again).
    #    A count, not a rate: on a loaded machine the rate varies, a latch does not.
    def flowing_after() -> int:
        return sum(1 for _, received in skeletons if received > injected_ns + 10**9)

    assert wait_until(lambda: flowing_after() >= SKELETONS_AFTER, 60.0, spin=ros_node.spin_once), (
        f"only {flowing_after()} skeletons after the bad stamps\n{logs()}")
    assert all(proc.poll() is None for proc in procs), logs()

    # 2. Output stamps stay near now: nothing went out stamped anywhere near a day ahead.
    leads = [(stamp - received) / 1e9 for stamp, received in skeletons]
    assert max(leads) < 1.0, f"a skeleton was stamped {max(leads):.1f} s ahead of its arrival"

    # 3. The bad messages that reached the node are counted by reason (and logged). Not necessarily
    #    all ten: when the node falls seconds behind (load ~50 on two cores), its KEEP_LAST input
    #    queues (/tf 100, hands 10) replace the oldest samples before it reads them; none got through (2.).
    keys = ("rejected.tf_future_stamp", "rejected.hands_future_stamp")

    def counted() -> bool:
        counts = [counters.get(key, 0) for key in keys]
        return sum(counts) >= 1 and max(counts) <= BAD_MESSAGES

    assert wait_until(counted, 30.0, spin=ros_node.spin_once), {key: counters.get(key) for key in keys}
    assert "ahead of this node's clock" in read_log(procs[2]), read_log(procs[2])
