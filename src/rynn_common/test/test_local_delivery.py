"""Nodes composed in one process deliver to each other in-process and still publish over DDS."""

import threading

import pytest

from ros_test_tools import wait_until

pytestmark = pytest.mark.ros


def test_a_composed_subscriber_gets_the_published_object_and_other_listeners_still_get_it_over_dds(ros_node):
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from std_msgs.msg import String

    from rynn_common.local_delivery import LocalPublisher, LocalSubscription, connect_local

    context = ros_node.context
    source, consumer, bystander = (Node(name, context=context) for name in ("source", "consumer", "bystander"))
    try:
        local_got, remote_got, dds_got = [], [], []
        source.output = LocalPublisher(source, String, "/test/local_delivery", 10)
        consumer.input = LocalSubscription(consumer, String, "/test/local_delivery",
                                           lambda msg: local_got.append((msg, threading.get_ident())), 10)
        # no composed publisher of this topic: stays a DDS subscription
        bystander.input = LocalSubscription(bystander, String, "/test/remote", lambda msg: remote_got.append(msg.data), 10)
        ros_node.create_subscription(String, "/test/local_delivery", lambda msg: dds_got.append(msg.data), 10)
        remote_publisher = ros_node.create_publisher(String, "/test/remote", 10)

        assert connect_local([source, consumer, bystander]) == ["/test/local_delivery"]
        assert consumer.input.local and not bystander.input.local
        assert "/test/local_delivery" not in [s.topic_name for s in consumer.subscriptions]  # no second copy by DDS
        assert [s.topic_name for s in bystander.subscriptions] == ["/test/remote"]

        assert wait_until(lambda: source.output.publisher.get_subscription_count() == 1, 10.0)
        sent = [String(data=f"sample {i}") for i in range(3)]
        for msg in sent:
            source.output.publish(msg)
        # delivered before publish returned, on the publishing thread, as the object itself
        assert [(msg, thread) for msg, thread in local_got] == [(msg, threading.get_ident()) for msg in sent]
        assert all(got is msg for (got, _), msg in zip(local_got, sent, strict=True))

        assert wait_until(lambda: len(dds_got) == 3, 10.0, spin=ros_node.spin_once), dds_got
        assert dds_got == ["sample 0", "sample 1", "sample 2"]

        executor = SingleThreadedExecutor(context=context)
        executor.add_node(bystander)
        assert wait_until(lambda: remote_publisher.get_subscription_count() == 1, 10.0)
        remote_publisher.publish(String(data="over dds"))
        assert wait_until(lambda: remote_got == ["over dds"], 10.0, spin=lambda: executor.spin_once(timeout_sec=0.05))
        executor.shutdown()
        assert len(local_got) == 3  # nothing arrived twice
    finally:
        for node in (source, consumer, bystander):
            node.destroy_node()
