"""A polled subscription holds what DDS delivered until its node takes it: every message in order, with the
time DDS received it, none taken by an executor; its topic follows the owner's remappings, and its QoS
events run where the owner is spun."""

import time

import pytest

from ros_test_tools import wait_until

pytestmark = pytest.mark.ros


def test_every_message_waits_for_take_in_order_with_its_reception_time(ros_node):
    from rclpy.duration import Duration
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    from rynn_common.cdr import deserialize
    from rynn_common.polled_input import PolledSubscription

    context = ros_node.context
    owner = Node("owner", context=context, cli_args=["--ros-args", "-r", "/test/renamed:=/test/polled"])
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(owner)
    try:
        polled = PolledSubscription(owner, String, "/test/renamed", QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
        assert polled.topic_name == "/test/polled"  # the owner's remapping
        assert "_owner_intake" in ros_node.get_node_names()  # hidden, its own
        publisher = ros_node.create_publisher(String, "/test/polled", QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
        assert wait_until(lambda: publisher.get_subscription_count() == 1, 10.0)
        sent_at = time.time_ns()
        for i in range(20):
            publisher.publish(String(data=f"m{i}"))
        for _ in range(10):  # an executor spinning the owner takes nothing from the polled subscription
            executor.spin_once(timeout_sec=0.01)
        taken = []
        assert wait_until(lambda: taken.extend(iter(polled.take, None)) or len(taken) == 20, 10.0)
        assert [deserialize(raw, String).data for raw, _ in taken] == [f"m{i}" for i in range(20)]
        received = [info["received_timestamp"] for _, info in taken]
        assert sent_at <= received[0] <= received[-1] <= time.time_ns() and received == sorted(received)
        assert polled.take() is None

        for i in range(5):
            publisher.publish(String(data=f"n{i}"))
        assert publisher.wait_for_all_acked(Duration(seconds=10))  # all five wait in the reader's queue
        newest = polled.take_newest()
        assert deserialize(newest[0], String).data == "n4" and polled.take() is None and polled.take_newest() is None

        polled.destroy()
        assert wait_until(lambda: "_owner_intake" not in ros_node.get_node_names(), 10.0)
    finally:
        executor.shutdown()
        owner.destroy_node()


def test_its_qos_events_run_on_the_owners_executor(ros_node):
    from rclpy.event_handler import SubscriptionEventCallbacks
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    from rynn_common.polled_input import PolledSubscription

    context = ros_node.context
    owner = Node("event_owner", context=context)
    executor = SingleThreadedExecutor(context=context)
    try:
        incompatible = []
        events = SubscriptionEventCallbacks(incompatible_qos=lambda event: incompatible.append(event.total_count))
        polled = PolledSubscription(owner, String, "/test/polled_events", QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE),
                                    event_callbacks=events)
        executor.add_node(owner)
        ros_node.create_publisher(String, "/test/polled_events", QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT))
        assert wait_until(lambda: bool(incompatible), 10.0, spin=lambda: executor.spin_once(timeout_sec=0.05))
        polled.destroy()
    finally:
        executor.shutdown()
        owner.destroy_node()
