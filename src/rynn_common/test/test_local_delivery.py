"""Nodes composed in one process deliver to each other in-process, still publish over DDS, and still
hear other publishers of the topic."""

import threading
import time

import pytest

from ros_test_tools import wait_until

pytestmark = pytest.mark.ros


def test_a_composed_subscriber_gets_the_object_once_and_other_publishers_still_reach_it(ros_node):
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from std_msgs.msg import String

    from rynn_common.local_delivery import LocalPublisher, LocalSubscription, connect_local

    context = ros_node.context
    source, consumer, bystander = (Node(name, context=context) for name in ("source", "consumer", "bystander"))
    executor = SingleThreadedExecutor(context=context)
    try:
        got, bystander_got, dds_got = [], [], []
        source.output = LocalPublisher(source, String, "/test/local_delivery", 10)
        consumer.input = LocalSubscription(consumer, String, "/test/local_delivery",
                                           lambda msg: got.append((msg, threading.get_ident())), 10)
        # no composed publisher of this topic: not linked
        bystander.input = LocalSubscription(bystander, String, "/test/remote", lambda msg: bystander_got.append(msg.data), 10)
        ros_node.create_subscription(String, "/test/local_delivery", lambda msg: dds_got.append(msg.data), 10)
        outsider = ros_node.create_publisher(String, "/test/local_delivery", 10)  # another process's publisher, say
        remote = ros_node.create_publisher(String, "/test/remote", 10)

        assert connect_local([source, consumer, bystander]) == ["/test/local_delivery"]
        assert consumer.input.linked and not bystander.input.linked
        executor.add_node(consumer)
        executor.add_node(bystander)
        spin = lambda: (executor.spin_once(timeout_sec=0.02), ros_node.spin_once(0.02))  # noqa: E731
        assert wait_until(lambda: source.output.publisher.get_subscription_count() == 2
                          and outsider.get_subscription_count() == 2 and remote.get_subscription_count() == 1, 10.0)

        sent = [String(data=f"sample {i}") for i in range(3)]
        for msg in sent:
            source.output.publish(msg)
        # delivered before publish returned, on the publishing thread, as the object itself
        assert [(msg, thread) for msg, thread in got] == [(msg, threading.get_ident()) for msg in sent]
        assert all(received is msg for (received, _), msg in zip(got, sent, strict=True))
        # still on DDS for everyone else; the consumer's DDS copies are recognised and dropped
        assert wait_until(lambda: len(dds_got) == 3 and consumer.input.copies_dropped == 3, 10.0, spin=spin)
        assert dds_got == ["sample 0", "sample 1", "sample 2"]

        outsider.publish(String(data="from elsewhere"))
        remote.publish(String(data="over dds"))
        assert wait_until(lambda: len(got) == 4 and bystander_got == ["over dds"], 10.0, spin=spin)
        assert got[3][0].data == "from elsewhere" and got[3][0] is not sent[-1]  # deserialised, delivered once
        for _ in range(20):
            spin()
        assert len(got) == 4 and consumer.input.copies_dropped == 3 and dds_got[-1] == "from elsewhere"
    finally:
        executor.shutdown()
        for node in (source, consumer, bystander):
            node.destroy_node()


def test_a_subscription_with_required_bytes_never_deserialises_messages_without_them(ros_node):
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from std_msgs.msg import String

    from rynn_common.local_delivery import LocalSubscription

    context = ros_node.context
    consumer = Node("consumer", context=context)
    executor = SingleThreadedExecutor(context=context)
    try:
        got = []
        consumer.input = LocalSubscription(consumer, String, "/test/required_bytes", lambda msg: got.append(msg.data), 10,
                                           required_bytes=b"operator_world")
        executor.add_node(consumer)
        outsider = ros_node.create_publisher(String, "/test/required_bytes", 10)
        assert wait_until(lambda: outsider.get_subscription_count() == 1, 10.0)
        sent = ["base_link -> link_1", "operator_world -> operator_chest", "world", "x operator_world"]
        for data in sent:
            outsider.publish(String(data=data))
        spin = lambda: executor.spin_once(timeout_sec=0.02)  # noqa: E731
        assert wait_until(lambda: len(got) == 2, 10.0, spin=spin)
        for _ in range(20):
            spin()
        assert got == ["operator_world -> operator_chest", "x operator_world"]
    finally:
        executor.shutdown()
        consumer.destroy_node()


def test_a_linked_publisher_puts_at_most_dds_rate_hz_on_dds_and_every_message_in_process(ros_node):
    """The operator container's 120 Hz samples: every one to the solver, the recorder's and viewers' share on DDS."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from std_msgs.msg import String

    from rynn_common.local_delivery import LocalPublisher, LocalSubscription, connect_local

    context = ros_node.context
    source, consumer, lone = (Node(name, context=context) for name in ("source", "consumer", "lone"))
    executor = SingleThreadedExecutor(context=context)
    try:
        got, dds_got, lone_got = [], [], []
        source.output = LocalPublisher(source, String, "/test/dds_rate", 10, dds_rate_hz=1.0)
        consumer.input = LocalSubscription(consumer, String, "/test/dds_rate", lambda msg: got.append(msg.data), 100)
        lone.output = LocalPublisher(lone, String, "/test/dds_rate_lone", 10, dds_rate_hz=1.0)  # no one in-process
        ros_node.create_subscription(String, "/test/dds_rate", lambda msg: dds_got.append(msg.data), 100)
        ros_node.create_subscription(String, "/test/dds_rate_lone", lambda msg: lone_got.append(msg.data), 100)
        assert connect_local([source, consumer, lone]) == ["/test/dds_rate"]
        executor.add_node(consumer)
        spin = lambda: (executor.spin_once(timeout_sec=0.02), ros_node.spin_once(0.02))  # noqa: E731
        assert wait_until(lambda: source.output.publisher.get_subscription_count() == 2
                          and lone.output.publisher.get_subscription_count() == 1, 10.0)

        for i in range(40):  # back to back: well within one second
            source.output.publish(String(data=f"sample {i}"))
            if i < 5:
                lone.output.publish(String(data=f"lone {i}"))
        assert got == [f"sample {i}" for i in range(40)] and source.output.dds_skipped == 39
        assert wait_until(lambda: dds_got == ["sample 0"] and consumer.input.copies_dropped == 1
                          and len(lone_got) == 5, 10.0, spin=spin)
        assert lone_got == [f"lone {i}" for i in range(5)] and lone.output.dds_skipped == 0  # not linked: all on DDS
        time.sleep(1.0)
        source.output.publish(String(data="a second later"))
        assert wait_until(lambda: dds_got == ["sample 0", "a second later"] and consumer.input.copies_dropped == 2,
                          10.0, spin=spin)
        for _ in range(20):
            spin()
        assert len(got) == 41 and len(dds_got) == 2  # no copy delivered twice
    finally:
        executor.shutdown()
        for node in (source, consumer, lone):
            node.destroy_node()


@pytest.mark.parametrize("as_bytes", [False, True], ids=["message", "packed bytes"])
def test_publish_sample_builds_a_message_only_for_dds_and_subscriptions_without_on_sample(ros_node, as_bytes):
    """``make_message`` may return the message or its serialised bytes (what the packed layouts give): DDS gets
    those bytes, their copy is still recognised, and a subscription without ``on_sample`` gets a message."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.serialization import serialize_message
    from std_msgs.msg import String

    from rynn_common.local_delivery import LocalPublisher, LocalSubscription, connect_local

    context = ros_node.context
    source, sampler, reader = (Node(name, context=context) for name in ("source", "sampler", "reader"))
    executor = SingleThreadedExecutor(context=context)
    try:
        samples, messages, dds_got, built = [], [], [], []
        source.output = LocalPublisher(source, String, "/test/samples", 10, dds_rate_hz=1.0)
        sampler.input = LocalSubscription(sampler, String, "/test/samples", lambda msg: messages.append(("sampler", msg.data)),
                                          100, on_sample=samples.append)
        ros_node.create_subscription(String, "/test/samples", lambda msg: dds_got.append(msg.data), 100)
        assert connect_local([source, sampler]) == ["/test/samples"]
        executor.add_node(sampler)
        spin = lambda: (executor.spin_once(timeout_sec=0.02), ros_node.spin_once(0.02))  # noqa: E731
        assert wait_until(lambda: source.output.publisher.get_subscription_count() == 2, 10.0)

        def message(i: int) -> String | bytes:
            built.append(i)
            msg = String(data=f"sample {i}")
            return serialize_message(msg) if as_bytes else msg

        for i in range(10):
            source.output.publish_sample(("sample", i), lambda i=i: message(i))
        assert samples == [("sample", i) for i in range(10)] and built == [0]  # one message: the one DDS took
        assert wait_until(lambda: dds_got == ["sample 0"] and sampler.input.copies_dropped == 1, 10.0, spin=spin)
        assert messages == []  # its DDS copy recognised, not delivered again

        reader.input = LocalSubscription(reader, String, "/test/samples", lambda msg: messages.append(("reader", msg.data)), 100)
        source.output.local_subscriptions = ()
        assert connect_local([source, sampler, reader]) == ["/test/samples"]
        source.output.publish_sample(("sample", 10), lambda: message(10))  # built once, for the reader (and DDS if due)
        assert built == [0, 10] and messages == [("reader", "sample 10")] and samples[-1] == ("sample", 10)
    finally:
        executor.shutdown()
        for node in (source, sampler, reader):
            node.destroy_node()
