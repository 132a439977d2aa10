"""The console's access rules without a browser: where it may listen, the token file, the gate."""

from __future__ import annotations

import pytest

from rynn_world.console.access import (
    MIN_TOKEN_LENGTH,
    AccessError,
    AccessGate,
    check_binding,
    is_loopback,
    read_token_file,
    write_token_file,
)

TOKEN = "k3y-for-the-console-0123"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.53", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts(host):
    assert is_loopback(host)
    check_binding(host, "")  # no token needed


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.168.1.20", "10.0.0.1", "robot-pc", "example.com"])
def test_other_hosts_need_a_token(host):
    assert not is_loopback(host)
    with pytest.raises(AccessError, match="without an access token"):
        check_binding(host, "")
    check_binding(host, TOKEN)


def test_token_file_rules(tmp_path):
    assert read_token_file("") == ""
    good = write_token_file(tmp_path / "token", TOKEN)
    assert read_token_file(str(good)) == TOKEN
    with pytest.raises(AccessError, match="cannot read"):
        read_token_file(str(tmp_path / "missing"))
    short = write_token_file(tmp_path / "short", "x" * (MIN_TOKEN_LENGTH - 1))
    with pytest.raises(AccessError, match="at least"):
        read_token_file(str(short))
    good.chmod(0o644)
    with pytest.raises(AccessError, match="group or others"):
        read_token_file(str(good))
    with pytest.raises(FileExistsError):  # never overwrites a token
        write_token_file(short, TOKEN)


def test_no_token_allows_every_browser():
    gate = AccessGate("")
    assert not gate.required
    assert gate.refusal(7, "Real") is None and gate.refused == 0


def test_token_gate_is_per_browser():
    gate = AccessGate(TOKEN)
    assert gate.required
    reason = gate.refusal(1, "Real")
    assert reason is not None and "Real: refused" in reason and "access token" in reason
    assert gate.refused == 1
    assert not gate.enter(1, TOKEN[:-1])  # a prefix while typing
    assert not gate.allowed(1)
    assert gate.enter(1, f" {TOKEN}\n")
    assert gate.allowed(1) and gate.refusal(1, "Start") is None
    assert not gate.allowed(2), "one browser's token unlocked another"
    assert gate.refusal(None, "Task") is None  # the server setting a value back
    assert not gate.enter(1, "wrong")  # a wrong entry locks again
    assert not gate.allowed(1)
    assert gate.enter(1, TOKEN) and gate.granted_total == 2
    gate.forget(1)
    assert not gate.allowed(1)
    assert gate.refused == 1
