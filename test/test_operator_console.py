"""The operator console in real headless browsers, on the real graph.

The embedded launcher starts the whole graph with the console (on a free port) and the recorder;
Debian's headless Chromium opens the page, then a second browser opens it too. The test sees the
camera image change on the page, switches Digital then Real with the page's buttons and watches
/rynn/mode change from its own subscriber; sees a refusal (Stop with nothing recording) on both
pages; records an episode from the page and reads the bag from disk; starts a second one from the
other browser and discards it from the first (gone from disk); calibrates the operator pose from the
page (the retarget node logs it). It also checks that the console subscribes to nothing until a
browser connects, keeps serving the first browser when the second leaves, and lets go when both left.
"""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest
import yaml

from launched_graph import ALL_UP, launcher_args, unique_lcm_url
from ros_test_tools import read_log, wait_until

TASK = "stack the cups"
MODE_CLICKS = 3  # a refused switch (robot state not trusted at that instant) is clicked again


def free_tcp_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def console_subscribes(node, topic: str) -> bool:
    return any(info.node_name == "operator_console_viewer" for info in node.get_subscriptions_info_by_topic(topic))


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.timeout(2400)  # a whole graph plus two software-WebGL browsers on two shared cores
def test_console_shows_the_camera_switches_modes_and_records_from_a_browser(tmp_path, start_process, ros_node):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rosbags.rosbag2 import Reader
    from std_msgs.msg import String

    from rynn_world.console import headless_browser as browser

    port, bags = free_tcp_port(), tmp_path / "bags"
    launcher = start_process(launcher_args(
        tmp_path / "logs", "model_config:=tiny", "camera_width:=320", "camera_height:=240",
        f"lcm_url:={unique_lcm_url()}", "record:=true", f"record_dir:={bags}", f"console_port:={port}",
        # No 3D robots: headless Chromium draws them with software WebGL on every pose update, which on
        # two loaded cores stalled each WebDriver call for tens of seconds (the 3D view is not what this
        # test checks; test_console_core checks its poses).
        # A service answer may take longer than the console's usual 10 s on two loaded cores: wait for it.
        sets=("sim_robot.sim.render_rate_hz=5.0", "operator_console.robot_view=false",
              "operator_console.service_timeout_s=60.0")), "launcher")
    assert wait_until(lambda: ALL_UP.search(read_log(launcher)) or launcher.poll() is not None, 300.0), read_log(launcher)
    assert launcher.poll() is None, read_log(launcher)
    assert f"operator console on http://127.0.0.1:{port}/" in read_log(launcher)

    modes: list[str] = []
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    ros_node.create_subscription(String, "/rynn/mode", lambda msg: modes.append(msg.data), latched)
    assert wait_until(lambda: modes[-1:] == ["real"], 60.0, spin=ros_node.spin_once), modes

    # No browser: the console subscribes to nothing (the recorder's subscription, on its hidden intake node
    # (rynn_common.polled_input), shows discovery works).
    camera = "/camera/camera/color/image_raw"
    assert wait_until(lambda: any(i.node_name == "_rynn_recorder_intake"
                                  for i in ros_node.get_subscriptions_info_by_topic(camera)),
                      60.0, spin=ros_node.spin_once)
    assert not console_subscribes(ros_node, camera) and not console_subscribes(ros_node, "/rynn/status")

    url = f"http://127.0.0.1:{port}/"
    driver = browser.start_browser(url, window_size=(1024, 720))  # small: less to render
    second = None
    try:
        assert wait_until(lambda: console_subscribes(ros_node, camera), 120.0, spin=ros_node.spin_once), read_log(launcher)

        # The canonical camera is on the page, at most 640 px wide, and changing (the <img> is looked up
        # afresh each time: the page may replace it).
        assert browser.wait_for(lambda: "FPS, frame age" in browser.page_text(driver), 120.0), browser.page_text(driver)
        width = browser.wait_for(lambda: driver.execute_script(
            "const image = arguments[0]; return image && image.complete ? image.naturalWidth : 0;",
            browser.camera_element(driver)), 120.0)
        assert width is not None and width <= 640, (width, browser.page_text(driver))
        first = browser.wait_for(lambda: browser.camera_pixels(driver), 120.0)
        assert first is not None, browser.page_text(driver)

        def changed_from_first():
            now = browser.camera_pixels(driver)
            return now is not None and now.shape == first.shape and np.abs(now.astype(np.int16) - first).mean() > 0.5

        assert browser.wait_for(changed_from_first, 120.0, period=1.0), "the camera image on the page did not change"

        # Digital, then Real: the mode changes over DDS, the page says the answer. The bridge refuses real
        # mode while it cannot trust the robot state (a starved simulator's LCM state silent past its 100 ms
        # timeout): the page says why and the operator clicks again, as the test does (each click is one
        # SetMode in the bridge's log; its answer is read there, where an earlier answer cannot be mistaken for it).
        bridge_log = lambda: (tmp_path / "logs" / "rynn_bridge.log").read_text()  # noqa: E731
        for label in ("Digital", "Real"):
            for _ in range(MODE_CLICKS):
                calls = bridge_log().count(f"SetMode {label.lower()}:")
                browser.click_button(driver, label)
                assert wait_until(lambda label=label, calls=calls: bridge_log().count(f"SetMode {label.lower()}:") > calls,
                                  120.0, spin=ros_node.spin_once), (browser.page_text(driver), read_log(launcher)[-3000:])
                if f"SetMode {label.lower()}: switched" in bridge_log():
                    break
                assert browser.wait_for(lambda label=label: f"{label}: REFUSED" in browser.page_text(driver), 60.0), (
                    browser.page_text(driver))
            assert wait_until(lambda label=label: modes[-1] == label.lower(), 120.0, spin=ros_node.spin_once), (
                modes, browser.page_text(driver), read_log(launcher)[-3000:])
            assert browser.wait_for(lambda label=label: f"{label}: accepted" in browser.page_text(driver), 60.0), browser.page_text(driver)
            assert browser.wait_for(lambda label=label: f"Mode: {label.upper()}" in browser.page_text(driver), 60.0)
        assert bridge_log().count("SetMode digital: switched") == 1 and bridge_log().count("SetMode real: switched") == 1, bridge_log()

        # A second browser on the same page: it shows the live camera too, and what one browser asks
        # is answered on both (the page is server-wide). A refusal is shown with its reason.
        second = browser.start_browser(url, window_size=(1024, 720))
        assert browser.wait_for(lambda: "FPS, frame age" in browser.page_text(second), 120.0), browser.page_text(second)
        browser.click_button(second, "Stop")
        refusal = "stop failed: nothing to stop: no episode is recording"
        for page in (second, driver):
            assert browser.wait_for(lambda page=page: refusal in browser.page_text(page), 60.0), browser.page_text(page)

        # Record: the task goes to the recorder's parameter, Start and Stop from the page.
        browser.ready_element(driver, "//*[normalize-space(text())='Task']/following::input[1]", 120.0).send_keys(TASK)
        # Start records the task the console server has; the browser sends typing throttled, so wait for its echo.
        assert browser.wait_for(lambda: f"Task for the next episode: {TASK}" in browser.page_text(driver), 60.0), (
            browser.page_text(driver))
        browser.click_button(driver, "Start")
        started = browser.wait_for(lambda: "start: " in browser.page_text(driver) and browser.page_text(driver), 60.0)
        assert started, browser.page_text(driver)
        episode = Path(started.split("start: ", 1)[1].splitlines()[0].strip())
        assert episode.parent == bags, started
        assert browser.wait_for(lambda: f"`{episode}`" in browser.page_text(driver)
                                or f"Recording {episode}" in browser.page_text(driver), 60.0), browser.page_text(driver)
        assert browser.wait_for(lambda: "/joint_states" in browser.page_text(driver), 60.0), browser.page_text(driver)
        browser.click_button(driver, "Stop")
        assert browser.wait_for(lambda: f"stopped {episode.name}:" in browser.page_text(driver), 60.0), browser.page_text(driver)

        # Discard: a second episode started from the other browser, discarded from the first: gone from disk.
        def second_episode():
            text = browser.page_text(driver)
            path = Path(text.split("start: ", 1)[1].splitlines()[0].strip()) if "start: " in text else None
            return path if path is not None and path != episode and path.parent == bags else None

        browser.click_button(second, "Start")
        discarded = browser.wait_for(second_episode, 60.0)
        assert discarded is not None and discarded.exists(), browser.page_text(driver)
        browser.click_button(driver, "Discard")
        for page in (driver, second):
            assert browser.wait_for(lambda page=page: f"discard: discarded {discarded.name}" in browser.page_text(page),
                                    60.0), browser.page_text(page)
        assert wait_until(lambda: not discarded.exists(), 30.0), sorted(bags.iterdir())
        assert episode.exists()

        # Calibrate from the page: the retarget node captures the operator's neutral pose.
        browser.click_button(second, "Calibrate operator pose")
        for page in (second, driver):
            assert browser.wait_for(lambda page=page: "calibrated: operator neutral pose captured" in browser.page_text(page),
                                    60.0), browser.page_text(page)
        logs = lambda: "".join(path.read_text() for path in (tmp_path / "logs").glob("*.log"))  # noqa: E731
        assert "operator neutral pose captured" in logs()

        # The second browser leaves: the first still gets a live camera, and the console stays subscribed.
        second.quit()
        second = None
        before = browser.wait_for(lambda: browser.camera_pixels(driver), 120.0)
        assert before is not None

        def changed_since_second_left():
            now = browser.camera_pixels(driver)
            return now is not None and now.shape == before.shape and np.abs(now.astype(np.int16) - before).mean() > 0.5

        assert browser.wait_for(changed_since_second_left, 120.0, period=1.0), "the page stopped updating"
        assert console_subscribes(ros_node, camera) and "no browser connected" not in logs()
    finally:
        if second is not None:
            second.quit()
        driver.quit()

    # The bag is on disk, readable, with the page's task and the canonical topics in it.
    info = yaml.safe_load((episode / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["custom_data"]["task"] == TASK
    with Reader(episode) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
    assert counts.get("/joint_states", 0) > 0 and counts.get(camera, 0) > 0, counts

    # The browser left: the console lets go of every subscription.
    assert wait_until(lambda: not console_subscribes(ros_node, camera) and not console_subscribes(ros_node, "/rynn/status"),
                      120.0, spin=ros_node.spin_once), read_log(launcher)[-2000:]
    assert launcher.poll() is None


def test_the_screenshot_waits_for_a_healthy_digital_session():
    """scripts/console_screenshot.py takes its picture only from a page that shows digital mode, the
    canonical camera at 10 FPS or more, no fault and no stale stream (what the page says, as read here)."""
    import importlib.util

    from ros_test_tools import REPO_ROOT

    spec = importlib.util.spec_from_file_location("console_screenshot", REPO_ROOT / "scripts" / "console_screenshot.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    healthy_page = "Mode: DIGITAL\nHealth\nAction loop: 199 Hz (target 200 Hz)\nNo active faults.\n"
    assert script.health_problems("14.2 FPS, frame age 310 ms, 2200 frames", healthy_page, 10.0) == []
    slow = script.health_problems("1.8 FPS, frame age 39841 ms, 12 frames", healthy_page, 10.0)
    assert slow == ["canonical camera at 1.8 FPS (< 10)"]
    faulty = ("Mode: DIGITAL\nFaults\nrynn_bridge: camera: digital camera stalled: no frame for 39841 ms (timeout 500 ms)\n"
              "STALE: canonical camera (/camera/camera/color/image_raw): silent for 4.1 s\n")
    problems = script.health_problems("12.0 FPS, frame age 200 ms, 90 frames", faulty, 10.0)
    assert len(problems) == 2 and "digital camera stalled" in problems[0] and "silent for 4.1 s" in problems[1], problems
    assert script.health_problems("", "Mode: REAL\nNo active faults.", 10.0) == [
        "not in digital mode", "no canonical camera rate yet (no caption)"]
