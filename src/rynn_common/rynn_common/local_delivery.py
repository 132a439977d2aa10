"""In-process delivery between nodes composed in one process (rclcpp's intra-process communication,
which rclpy lacks).

A ``LocalPublisher`` publishes over DDS as any publisher does (recorders and other processes still
get every message), and hands the same message object to the ``LocalSubscription`` of any node of its
own process that ``connect_local`` linked to it: on the publisher's thread, before ``publish``
returns, without serialising or deserialising it. A linked subscription's DDS subscription is
destroyed, so it never receives a message twice (and no longer deserialises the other traffic on the
topic, e.g. robot_state_publisher's /tf for a tracker listener): it then hears only the publishers of
its own process. The callback gets the publisher's
object for the duration of the call: it may read it, not keep or change it (publishers may refill it).
"""

from __future__ import annotations

from typing import Callable

from rclpy.node import Node


class LocalPublisher:
    """``node.create_publisher(...)`` that can also deliver in-process (``connect_local``)."""

    def __init__(self, node: Node, msg_type, topic: str, qos):
        self.msg_type = msg_type
        self.publisher = node.create_publisher(msg_type, topic, qos)
        self.local_callbacks: tuple[Callable, ...] = ()

    @property
    def topic_name(self) -> str:
        return self.publisher.topic_name

    def publish(self, msg) -> None:
        self.publisher.publish(msg)
        for callback in self.local_callbacks:
            callback(msg)


class LocalSubscription:
    """``node.create_subscription(...)`` that ``connect_local`` can replace by in-process delivery."""

    def __init__(self, node: Node, msg_type, topic: str, callback: Callable, qos):
        self.node = node
        self.msg_type = msg_type
        self.callback = callback
        self.subscription = node.create_subscription(msg_type, topic, callback, qos)
        self.topic_name = self.subscription.topic_name  # resolved (remapped, namespaced), kept once destroyed
        self.local = False

    def go_local(self) -> None:
        self.node.destroy_subscription(self.subscription)
        self.local = True


def connect_local(nodes: list[Node]) -> list[str]:
    """Link every ``LocalSubscription`` attribute of ``nodes`` to the ``LocalPublisher`` attributes of the
    others with the same resolved topic and type; the linked topics, sorted. Call before the executor
    spins these nodes (a subscription is destroyed here)."""
    endpoints = [(node, value) for node in nodes for value in vars(node).values()
                 if isinstance(value, (LocalPublisher, LocalSubscription))]
    linked = set()
    for node, subscription in endpoints:
        if not isinstance(subscription, LocalSubscription):
            continue
        publishers = [publisher for other, publisher in endpoints
                      if other is not node and isinstance(publisher, LocalPublisher)
                      and publisher.topic_name == subscription.topic_name and publisher.msg_type is subscription.msg_type]
        if not publishers:
            continue
        subscription.go_local()
        for publisher in publishers:
            publisher.local_callbacks += (subscription.callback,)
        linked.add(subscription.topic_name)
    return sorted(linked)
