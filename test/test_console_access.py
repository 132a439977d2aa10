"""Issue 34: who may command through the operator console, in a real headless browser.

The console node runs on its own, with the test's node answering /rynn/set_mode and the
recorder's start service (counting every call: a call that reaches them is a command that
reached the robot side). Listening beyond localhost without a token is refused at start-up;
with a token, a browser that has not entered it clicks Real and Start and nothing is called,
and its page says why; once it entered the token, Real reaches /rynn/set_mode; a second
browser stays locked.
"""

from __future__ import annotations

import socket

import pytest

from ros_test_tools import read_log, wait_until

TOKEN = "console-token-for-the-test-0123456789"
REFUSAL = "refused, this browser has not entered the access token"


def free_tcp_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def console_args(*parameters: str) -> list[str]:
    args = ["-m", "rynn_world.nodes.operator_console", "--ros-args"]
    for parameter in ("robot_view:=false", *parameters):
        args += ["-p", parameter]
    return args


@pytest.mark.ros
def test_console_refuses_to_listen_beyond_localhost_without_a_token(start_process):
    console = start_process(console_args("host:=0.0.0.0", f"port:={free_tcp_port()}"), "console")
    assert wait_until(lambda: console.poll() is not None, 60.0), read_log(console)
    assert console.returncode != 0, read_log(console)
    assert "refusing to serve the operator console on '0.0.0.0' without an access token" in read_log(console)
    assert "operator console on http" not in read_log(console)


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_console_controls_need_the_token_in_each_browser(tmp_path, start_process, ros_node):
    from rynn_teleop_msgs.srv import SetMode
    from std_srvs.srv import Trigger

    from rynn_world.console import headless_browser as browser
    from rynn_world.console.access import write_token_file

    calls = {"mode": [], "start": 0}

    def set_mode(request, response):
        calls["mode"].append(int(request.mode))
        response.success, response.message = True, "test bridge switched"
        return response

    def start(_request, response):
        calls["start"] += 1
        response.success, response.message = True, str(tmp_path / "episode_0000")
        return response

    ros_node.create_service(SetMode, "/rynn/set_mode", set_mode)
    ros_node.create_service(Trigger, "/rynn/recorder/start", start)

    token_file = write_token_file(tmp_path / "console_token", TOKEN)
    port = free_tcp_port()
    console = start_process(console_args("host:=0.0.0.0", f"port:={port}", f"access_token_file:={token_file}"), "console")
    assert wait_until(lambda: "operator console on http" in read_log(console) or console.poll() is not None, 120.0,
                      spin=ros_node.spin_once), read_log(console)
    assert console.poll() is None, read_log(console)
    assert "access token required" in read_log(console)
    # Until the console sees the test's services its controls answer "not available", not a refusal.
    assert wait_until(lambda: ros_node.count_clients("/rynn/set_mode") > 0, 60.0, spin=ros_node.spin_once)

    spin = ros_node.spin_once
    first = browser.start_browser(f"http://127.0.0.1:{port}/", window_size=(1024, 720))
    second = None
    try:
        assert browser.wait_for(lambda: "Controls locked" in browser.page_text(first), 120.0), browser.page_text(first)

        # Locked: Real and Start do nothing but say why, on this browser's page.
        for label in ("Real", "Start"):
            browser.click_button(first, label)
            assert browser.wait_for(lambda label=label: f"{label}: {REFUSAL}" in browser.page_text(first), 60.0), (
                browser.page_text(first))
        assert not wait_until(lambda: calls["mode"] or calls["start"], 3.0, spin=spin), calls
        assert "accepted" not in browser.page_text(first)

        # A wrong token unlocks nothing.
        field = browser.ready_element(first, "//*[normalize-space(text())='Access token']/following::input[1]", 60.0)
        field.send_keys("not-the-token-at-all-0000")
        browser.click_button(first, "Digital")
        assert browser.wait_for(lambda: f"Digital: {REFUSAL}" in browser.page_text(first), 60.0), browser.page_text(first)
        assert not calls["mode"]

        # The token: this browser's controls work.
        field = browser.ready_element(first, "//*[normalize-space(text())='Access token']/following::input[1]", 60.0)
        field.clear()
        field.send_keys(TOKEN)
        assert browser.wait_for(lambda: "Controls unlocked in this browser" in browser.page_text(first), 60.0), (
            browser.page_text(first))
        browser.click_button(first, "Real")
        assert wait_until(lambda: calls["mode"], 60.0, spin=spin), browser.page_text(first)
        assert calls["mode"] == [SetMode.Request.MODE_REAL]
        assert browser.wait_for(lambda: "Real: accepted (test bridge switched)" in browser.page_text(first), 60.0), (
            browser.page_text(first))
        assert TOKEN not in browser.page_text(first)

        # Another browser is still locked.
        second = browser.start_browser(f"http://127.0.0.1:{port}/", window_size=(1024, 720))
        assert browser.wait_for(lambda: "Controls locked" in browser.page_text(second), 120.0), browser.page_text(second)
        browser.click_button(second, "Digital")
        assert browser.wait_for(lambda: f"Digital: {REFUSAL}" in browser.page_text(second), 60.0), (
            browser.page_text(second))
        assert not wait_until(lambda: len(calls["mode"]) > 1, 3.0, spin=spin), calls
        assert calls["start"] == 0
    finally:
        first.quit()
        if second is not None:
            second.quit()
    assert console.poll() is None, read_log(console)
