"""Subscriptions a node reads on its own clock (rclpy's take) instead of one executor callback per message.

Each message a spun subscription receives wakes the executor and runs a Python callback: 100-150 us of CPU
on the 2-core reference machine, however little the callback does. A node that needs a topic only when its
own loop runs (robot_state_publisher's /tf at 20 Hz from 100 Hz joint states; the recorder, which queues
messages for its writer thread) pays that for every message it is sent. A ``PolledSubscription`` belongs to a
hidden node of its own (``_<node>_intake``, listed by ``ros2 node list --all``) that no executor spins: the
messages wait in its DDS reader queue (its QoS depth) until ``take`` reads them, on the caller's thread.
The topic is resolved by the owning node, so its remappings apply.
"""

from __future__ import annotations

from rclpy.node import Node


def _intake_node(node: Node) -> Node:
    """The hidden node that holds ``node``'s polled subscriptions (one per node)."""
    intake = getattr(node, "_polled_intake", None)
    if intake is None:
        intake = Node(f"_{node.get_name()}_intake", namespace=node.get_namespace(), context=node.context,
                      use_global_arguments=False, enable_rosout=False, start_parameter_services=False)
        node._polled_intake = intake
    return intake


def take_message(subscription) -> tuple[object, dict] | None:
    """rclpy's take of one message from any ``subscription`` on the caller's thread: the oldest one DDS holds
    and its info, or None. A spun subscription's callback uses it to empty its queue in one call."""
    with subscription.handle:
        return subscription.handle.take_message(subscription.msg_type, subscription.raw)


class PolledSubscription:
    """A subscription of ``node`` to ``topic`` read with ``take`` (raw: the serialised bytes). Its QoS event
    callbacks (``event_callbacks``: message lost, incompatible QoS) run on ``node``'s executor."""

    def __init__(self, node: Node, msg_type, topic: str, qos, raw: bool = True, event_callbacks=None):
        self.topic_name = node.resolve_topic_name(topic)
        self._owner = node
        self._intake = _intake_node(node)
        self.subscription = self._intake.create_subscription(msg_type, self.topic_name, lambda *_: None, qos, raw=raw,
                                                             event_callbacks=event_callbacks)
        for handler in self.subscription.event_handlers:  # waited on where an executor spins
            self._intake.remove_waitable(handler)
            node.add_waitable(handler)

    def take(self) -> tuple[object, dict] | None:
        """The oldest message DDS holds for this subscription and its info (``source_timestamp``,
        ``received_timestamp``, ns), or None when there is none."""
        return take_message(self.subscription)

    def take_newest(self) -> tuple[object, dict] | None:
        """The newest message held (the older ones are read and dropped), or None."""
        newest = None
        while (taken := self.take()) is not None:
            newest = taken
        return newest

    def destroy(self) -> None:
        """Destroys the subscription, and the hidden node with its last one (before the owning node goes)."""
        for handler in self.subscription.event_handlers:
            self._owner.remove_waitable(handler)
            self._intake.add_waitable(handler)
        self._intake.destroy_subscription(self.subscription)
        if not list(self._intake.subscriptions):
            self._intake.destroy_node()
            self._owner._polled_intake = None
