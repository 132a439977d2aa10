"""In-process delivery between nodes composed in one process (rclcpp's intra-process communication,
which rclpy lacks).

A ``LocalPublisher`` publishes over DDS as any publisher does (recorders and other processes still
get every message), and hands the same message object to the ``LocalSubscription`` of any node of its
own process that ``connect_local`` linked to it: on the publisher's thread, before ``publish``
returns, without serialising it for them or deserialising it. The callback gets the publisher's
object for the duration of the call: it may read it, not keep or change it (publishers refill it).

``publish_sample`` hands a linked subscription's ``on_sample`` a ROS-free sample (what the message would
carry) instead of the message, and builds the message only for DDS: the glove and tracker nodes build no
Python message for the samples only the retarget node takes. Their samples are callables that compute
those fields, so the retarget node converts only the ones its worker takes (at most 30 of 120 a second).

Linked, a publisher given ``dds_rate_hz`` puts at most that many messages a second on DDS (every one
still goes in-process): the 120 Hz operator samples feed the in-process solver one by one, while the
recorder and viewers get what they need, without a serialise, a DDS write and a recorder write for each
sample. Not linked (its subscribers in other processes), it publishes every message.

A linked subscription still listens on DDS (raw), so publishers in other processes reach it as
before; the DDS copy of a message it already got in-process is recognised by its bytes (the
publisher serialises once and tells its linked subscriptions those bytes first) and dropped
without being deserialised.

A subscription given ``required_bytes`` also drops, undeserialised, every DDS message whose serialised
form lacks them: a message without a string holds no field equal to it, so a callback that ignores
such messages loses nothing. The retarget node's /tf input keeps only transforms under the operator's
world frame; deserialising robot_state_publisher's /tf too (54 transforms at 20 Hz, 1.8 ms of CPU
each here) on the executor thread that also runs its status timer left that thread ever further behind
on the loaded machine, composed: its /rynn/status and /diagnostics stopped (bench_soak).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

from rclpy.node import Node
from rclpy.serialization import serialize_message

from rynn_common.cdr import deserialize
from rynn_common.rate_gate import RateGate

# In-process messages whose DDS copy a subscription still waits for (a starved executor may take
# copies late; TF_QOS keeps 1000). Beyond it the oldest is forgotten: its copy, should it still
# come, is deserialised and delivered like any message (a stamp guard then drops it as old).
EXPECTED_COPIES = 1000


class LocalPublisher:
    """``node.create_publisher(...)`` that can also deliver in-process (``connect_local``); linked, at most
    ``dds_rate_hz`` messages a second go out on DDS as well (0: every message)."""

    def __init__(self, node: Node, msg_type, topic: str, qos, dds_rate_hz: float = 0.0):
        self.msg_type = msg_type
        self.publisher = node.create_publisher(msg_type, topic, qos)
        self.local_subscriptions: tuple[LocalSubscription, ...] = ()
        self._dds_gate = RateGate(1.0 / dds_rate_hz if dds_rate_hz > 0 else 0.0)
        self.dds_skipped = 0  # linked: messages delivered in-process only

    @property
    def topic_name(self) -> str:
        return self.publisher.topic_name

    def publish(self, msg) -> None:
        if not self.local_subscriptions:
            self.publisher.publish(msg)
            return
        self._publish_linked(lambda: msg)
        for subscription in self.local_subscriptions:
            subscription.callback(msg)

    def publish_sample(self, sample, make_message: Callable[[], object]) -> None:
        """Linked subscriptions given ``on_sample`` get ``sample``, what the message would carry without the
        message (the others the message); ``make_message()`` builds the message, or its serialised bytes, only
        when one goes out (on DDS, or to a subscription without ``on_sample``, which gets bytes deserialised):
        the operator samples need no Python message in-process."""
        if not self.local_subscriptions:
            self.publisher.publish(make_message())
            return
        msg = self._publish_linked(make_message)
        for subscription in self.local_subscriptions:
            if subscription.on_sample is not None:
                subscription.on_sample(sample)
            else:
                msg = make_message() if msg is None else msg
                subscription.callback(deserialize(msg, self.msg_type) if isinstance(msg, bytes) else msg)

    def _publish_linked(self, make_message: Callable[[], object]):
        """Linked: the message on DDS when due (its copies announced to the linked subscriptions); it, or None."""
        if not self._dds_gate.due(time.monotonic()):
            self.dds_skipped += 1
            return None
        msg = make_message()
        # what publish(msg) does inside; the DDS copies carry these bytes
        data = msg if isinstance(msg, bytes) else serialize_message(msg)
        for subscription in self.local_subscriptions:
            subscription.expect_copy(data)
        self.publisher.publish(data)
        return msg


class LocalSubscription:
    """``node.create_subscription(...)`` that ``connect_local`` can link to the publishers of its process;
    DDS messages without ``required_bytes`` in their serialised form never reach ``callback``; bytes that do not
    deserialize (malformed CDR, anyone may publish them) are counted in ``malformed`` and, when given,
    handed to ``on_malformed`` as a ``ValueError``, never raised into the executor."""

    def __init__(self, node: Node, msg_type, topic: str, callback: Callable, qos, required_bytes: bytes = b"",
                 on_malformed: Callable[[ValueError], None] | None = None, on_sample: Callable | None = None):
        self.msg_type = msg_type
        self.callback = callback
        self.on_sample = on_sample  # in-process samples of a publisher's ``publish_sample``, instead of the message
        self.required_bytes = required_bytes
        self.subscription = node.create_subscription(msg_type, topic, self._on_dds, qos, raw=True)
        self.topic_name = self.subscription.topic_name  # resolved (remapped, namespaced)
        self.linked = False
        self.copies_dropped = 0  # DDS copies of messages delivered in-process
        self.malformed = 0
        self.on_malformed = on_malformed
        self._expected: set[bytes] = set()
        self._order: deque[bytes] = deque()
        self._lock = threading.Lock()

    def expect_copy(self, data: bytes) -> None:
        with self._lock:
            self._expected.add(data)
            self._order.append(data)
            if len(self._order) > EXPECTED_COPIES:
                self._expected.discard(self._order.popleft())

    def _on_dds(self, data: bytes) -> None:
        with self._lock:
            if data in self._expected:
                self._expected.discard(data)
                self.copies_dropped += 1
                return
        if self.required_bytes not in data:
            return
        try:
            msg = deserialize(data, self.msg_type)
        except ValueError as error:
            self.malformed += 1
            if self.on_malformed is not None:
                self.on_malformed(error)
            return
        self.callback(msg)


def connect_local(nodes: list[Node]) -> list[str]:
    """Link every ``LocalSubscription`` attribute of ``nodes`` to the ``LocalPublisher`` attributes of the
    others with the same resolved topic and type; the linked topics, sorted."""
    endpoints = [(node, value) for node in nodes for value in vars(node).values()
                 if isinstance(value, (LocalPublisher, LocalSubscription))]
    linked = set()
    for node, subscription in endpoints:
        if not isinstance(subscription, LocalSubscription):
            continue
        for other, publisher in endpoints:
            if (other is not node and isinstance(publisher, LocalPublisher) and publisher.topic_name == subscription.topic_name
                    and publisher.msg_type is subscription.msg_type):
                publisher.local_subscriptions += (subscription,)
                subscription.linked = True
                linked.add(subscription.topic_name)
    return sorted(linked)
