"""Service calls that survive a restart of the server: a request that is not answered in time is sent
again, on a fresh client, until an overall deadline.

Why: when a server's process is killed and respawned (the recorder, ``respawn: true`` in the graph),
DDS keeps the dead server's endpoints in the graph until their lease runs out, so
``service_is_ready()`` / ``wait_for_service()`` answer at once, and a request written before the
new server's request reader has matched the client's writer reaches no one. Requests are volatile:
nothing resends it, and the client's future never completes. Measured with one long-lived client
calling the recorder right after each restart: 3 of 5 starts unanswered (the next call was answered);
a 30-minute soak lost 5 starts so, waiting 120 s for each.

Each attempt waits twice as long as the one before (a starved server answers late, and a resent
request it then refuses is noise). Earlier attempts stay pending until the call ends and the
earliest attempt that answered wins: a slow server's late answer is still taken, and because the
server answers in order, a resent request that it did get is answered after the first one.

Only for requests that are safe to repeat. The recorder's ``start`` and ``stop`` are: one it got
twice is not carried out twice, the second is refused ("already recording ...", "nothing to
stop"), and that refusal is only seen when the first answer was lost too. ``discard`` is not: a
second discard after one that deleted the recording episode deletes the episode stopped before it.
"""

from __future__ import annotations

import time
from typing import Callable

FIRST_ATTEMPT_S = 5.0  # a lost request after a restart is the usual case; doubled for each resend
SPIN_S = 0.05


class ServiceCaller:
    """One service's client (``make_client()`` builds one, ``destroy_client(client)`` drops one),
    called with ``call()``; ``resent`` counts the requests sent again since it was made."""

    def __init__(self, make_client: Callable[[], object], destroy_client: Callable[[object], None],
                 first_attempt_s: float = FIRST_ATTEMPT_S):
        self._make_client, self._destroy_client = make_client, destroy_client
        self.first_attempt_s = first_attempt_s
        self.client = make_client()
        self.resent = 0

    @property
    def name(self) -> str:
        return self.client.srv_name

    def call(self, request, spin_once: Callable[[float], None], timeout_s: float,
             clock: Callable[[], float] = time.monotonic):
        """The answer, or None when no attempt was answered (or the service never appeared) within
        ``timeout_s``. ``spin_once(seconds)`` runs the caller's executor (it delivers the answers)."""
        end = clock() + timeout_s
        attempts: list[tuple[object, object]] = []  # (client, future), oldest first
        attempt_s = self.first_attempt_s
        try:
            while True:
                while not self.client.service_is_ready():
                    if clock() >= end:
                        return None
                    spin_once(SPIN_S)
                attempts.append((self.client, self.client.call_async(request)))
                attempt_end = min(end, clock() + attempt_s)
                while (answer := earliest_answer(attempts)) is None and clock() < attempt_end:
                    spin_once(SPIN_S)
                if answer is not None or clock() >= end:
                    return answer
                self.resent += 1
                attempt_s *= 2
                self.client = self._make_client()
        finally:
            self._forget(attempts)

    def _forget(self, attempts: list[tuple[object, object]]) -> None:
        """Unanswered requests leave their client's pending table; replaced clients are destroyed."""
        replaced = {}
        for client, future in attempts:
            if not future.done():
                client.remove_pending_request(future)
            if client is not self.client:
                replaced[id(client)] = client
        for client in replaced.values():
            self._destroy_client(client)


def earliest_answer(attempts: list[tuple[object, object]]):
    """The result of the oldest attempt that has one (a failed future raises its exception)."""
    for _client, future in attempts:
        if future.done():
            return future.result()
    return None


def node_service_caller(node, srv_type, srv_name: str, first_attempt_s: float = FIRST_ATTEMPT_S) -> ServiceCaller:
    """A ServiceCaller whose clients belong to ``node``."""
    return ServiceCaller(lambda: node.create_client(srv_type, srv_name), node.destroy_client, first_attempt_s)
