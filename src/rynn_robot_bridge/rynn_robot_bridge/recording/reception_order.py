"""Messages taken from several subscriptions, handed to the bag in the order DDS received them.

Why: the recorder node takes its subscriptions one after another (rynn_common.polled_input). A message
that topic A receives while topic B is being taken waits for the next take, but B's messages of this
take are newer than it: sorting each take on its own wrote the bag with log times going backwards
(rosbag2's recorder writes in reception order, and so must this one). A take therefore hands on only
what was received before it began, less ``hold_back_ns``: Fast DDS stamps a sample's reception before
the sample can be taken, so a sample stamped just before the take may surface only in the next one.
The rest waits, merged with the next take's messages. A sample that surfaces later still (its
receiving thread preempted for longer than the hold-back) is logged at the last time handed on, never
before it, and counted as ``late``: the bag's log times never go backwards.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Generic, TypeVar

Item = TypeVar("Item")


class ReceptionOrder(Generic[Item]):
    """A merge of taken messages by reception time (ns); ties keep the order they were added in."""

    def __init__(self, hold_back_ns: int):
        if hold_back_ns < 0:
            raise ValueError(f"hold_back_ns must not be negative, got {hold_back_ns}")
        self.hold_back_ns = hold_back_ns
        self.released_ns = 0  # the latest log time handed on
        self.late = 0  # messages logged later than received, because they surfaced after a later one was handed on
        self._waiting: list[tuple[int, int, Item]] = []
        self._added = itertools.count()

    def __len__(self) -> int:
        return len(self._waiting)

    def add(self, received_ns: int, item: Item) -> None:
        heapq.heappush(self._waiting, (received_ns, next(self._added), item))

    def release(self, take_started_ns: int | None = None) -> list[tuple[int, Item]]:
        """(log time, item) of every message received before ``take_started_ns`` less the hold-back,
        oldest first; None releases everything (a start, a stop, shutdown)."""
        cutoff = math.inf if take_started_ns is None else take_started_ns - self.hold_back_ns
        released = []
        while self._waiting and self._waiting[0][0] <= cutoff:
            received_ns, _, item = heapq.heappop(self._waiting)
            if received_ns < self.released_ns:
                self.late += 1
            self.released_ns = max(self.released_ns, received_ns)
            released.append((self.released_ns, item))
        return released

    def advance(self, logged_ns: int) -> None:
        """Something was logged at ``logged_ns`` outside this order (the latched samples at a start):
        nothing handed on afterwards is logged before it."""
        self.released_ns = max(self.released_ns, logged_ns)
