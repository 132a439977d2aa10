"""ServiceCaller against a scripted server (no ROS): a lost request is sent again on a fresh client,
a late first answer still wins over the refusal of the resent request, and a silent server costs
the deadline, not more."""

from __future__ import annotations

import pytest

from rynn_common.service_calls import ServiceCaller


class FakeFuture:
    def __init__(self):
        self.result_value = None

    def done(self) -> bool:
        return self.result_value is not None

    def result(self):
        return self.result_value


class FakeServer:
    """Answers request ``i`` (0-based, in the order sent) ``delays[i]`` seconds after it was sent;
    None: the request is lost. Answers a request it got twice as a refusal, like the recorder."""

    def __init__(self, delays: list[float | None]):
        self.delays, self.now, self.sent, self.got = delays, 0.0, [], []

    def spin_once(self, seconds: float) -> None:
        self.now += seconds
        for index, (future, sent_at, request) in enumerate(self.sent):
            delay = self.delays[index] if index < len(self.delays) else 0.0
            if delay is not None and future.result_value is None and self.now >= sent_at + delay:
                future.result_value = f"refused {request}" if request in self.got else f"done {request}"
                self.got.append(request)


class FakeClient:
    srv_name = "/fake"

    def __init__(self, server: FakeServer):
        self.server, self.pending, self.destroyed = server, [], False

    def service_is_ready(self) -> bool:
        return True

    def call_async(self, request):
        future = FakeFuture()
        self.server.sent.append((future, self.server.now, request))
        self.pending.append(future)
        return future

    def remove_pending_request(self, future) -> None:
        self.pending.remove(future)


def caller_for(server: FakeServer, first_attempt_s: float = 5.0):
    clients: list[FakeClient] = []

    def make() -> FakeClient:
        clients.append(FakeClient(server))
        return clients[-1]

    def destroy(client: FakeClient) -> None:
        client.destroyed = True

    return ServiceCaller(make, destroy, first_attempt_s), clients


def test_a_lost_request_is_sent_again_on_a_fresh_client():
    server = FakeServer([None, 0.2])
    caller, clients = caller_for(server)
    assert caller.call("start", server.spin_once, timeout_s=120.0, clock=lambda: server.now) == "done start"
    assert caller.resent == 1 and len(clients) == 2 and caller.client is clients[1]
    assert server.now == pytest.approx(5.2, abs=0.1)  # one attempt's wait, then the resent request's answer
    assert clients[0].destroyed and clients[0].pending == []  # the lost request no longer pending
    assert not clients[1].destroyed


def test_a_late_first_answer_wins_over_the_refusal_of_the_resent_request():
    server = FakeServer([6.0, 1.5])  # the first is answered after the resend (5 s), before the resent one
    caller, _ = caller_for(server)
    assert caller.call("start", server.spin_once, timeout_s=120.0, clock=lambda: server.now) == "done start"
    assert caller.resent == 1


def test_attempts_wait_twice_as_long_each_time_until_the_deadline():
    server = FakeServer([None] * 10)
    caller, clients = caller_for(server, first_attempt_s=1.0)
    assert caller.call("stop", server.spin_once, timeout_s=20.0, clock=lambda: server.now) is None
    assert server.now == pytest.approx(20.0, abs=0.1)
    assert [sent_at for _, sent_at, _ in server.sent] == pytest.approx([0.0, 1.0, 3.0, 7.0, 15.0], abs=0.2)
    assert caller.resent == 4 and all(client.pending == [] for client in clients)
    assert [client.destroyed for client in clients] == [True, True, True, True, False]


def test_an_answered_call_sends_once():
    server = FakeServer([0.1])
    caller, clients = caller_for(server)
    assert caller.call("stop", server.spin_once, timeout_s=10.0, clock=lambda: server.now) == "done stop"
    assert caller.resent == 0 and len(clients) == 1 and len(server.sent) == 1
