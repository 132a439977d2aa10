"""The operator console's ROS-free core: stream statistics, frames for the browser, the text it shows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rynn_common.description import D435I_COLOR
from rynn_world.console.board import (
    DiagnosticReport,
    HealthBoard,
    PendingCalls,
    RecordingBoard,
    StageTiming,
    StatusReport,
    describe_mode_answer,
    describe_recorder_answer,
)
from rynn_world.console.frames import FramePacer, SkeletonOverlay, downscale
from rynn_world.console.pose import JointPoser
from rynn_world.console.streams import RequiredStream, Stage, StreamStats, stale_banner

# --- streams ---------------------------------------------------------------------------------


def test_stream_rate_and_age_come_from_arrivals_and_header_stamps():
    stats = StreamStats(window_s=2.0)
    for i in range(21):  # 20 Hz for 1 s, each frame stamped 50 ms before it arrived
        stats.add(100.0 + i * 0.05, stamp=5000.0 + i * 0.05 - 0.05)
    reading = stats.reading(now_monotonic=101.1, now_stamp_clock=5001.1)
    assert reading.fps == pytest.approx(20.0)
    assert reading.age_s == pytest.approx(0.15)  # 5001.1 - 4999.95 (newest stamp)
    assert reading.silent_s == pytest.approx(0.1)
    assert reading.count == 21


def test_a_backlog_taken_at_once_still_reads_at_the_streams_rate():
    """A starved viewer takes 16 frames stamped over one second in 20 ms: the rate is 15 FPS, not 750."""
    stats = StreamStats(window_s=2.0)
    for i in range(16):
        stats.add(50.0 + i * 0.00125, stamp=7000.0 + i / 15.0)
    assert stats.reading(now_monotonic=50.1, now_stamp_clock=7001.2).fps == pytest.approx(15.0)


def test_stream_rate_forgets_arrivals_outside_its_window():
    stats = StreamStats(window_s=1.0)
    for i in range(10):
        stats.add(float(i) * 0.01)  # a burst long ago
    for i in range(6):
        stats.add(10.0 + i * 0.2)  # then 5 Hz
    assert stats.reading(11.0, 0.0).fps == pytest.approx(5.0)
    assert stats.reading(30.0, 0.0).fps == 0.0  # nothing recent: no rate, but still counted
    stats.reset()
    assert stats.reading(30.0, 0.0).silent_s is None and stats.count == 0


def test_a_stream_without_stamps_reports_its_silence_as_age():
    stats = StreamStats()
    stats.add(10.0)
    assert stats.reading(10.5, 99.0).age_s == pytest.approx(0.5)
    with pytest.raises(ValueError, match="window_s must be positive"):
        StreamStats(window_s=0.0)


def test_the_banner_names_each_stale_required_stream():
    required = [RequiredStream("/camera", "camera", 2.0), RequiredStream("/joint_states", "joints", 1.0)]
    fresh, silent = StreamStats(), StreamStats()
    fresh.add(9.9)
    silent.add(5.0)
    readings = {"/camera": fresh.reading(10.0, 10.0), "/joint_states": silent.reading(10.0, 10.0)}
    assert stale_banner(readings, required, watching_for_s=30.0) == "STALE: joints (/joint_states): silent for 5.0 s"
    readings["/joint_states"] = fresh.reading(10.0, 10.0)
    assert stale_banner(readings, required, watching_for_s=30.0) == ""
    # A stream that never came is only stale once the console has watched longer than its limit.
    assert stale_banner({}, required, watching_for_s=0.5) == ""
    assert stale_banner({}, required, watching_for_s=1.5) == "STALE: joints (/joint_states): nothing received"


# --- frames ----------------------------------------------------------------------------------


def test_a_stale_camera_names_the_first_stage_of_its_chain_that_stopped():
    """Digital mode: trackers -> retarget -> world model -> bridge relay -> canonical camera. The stage
    named is the first one silent, every stage before it fresh."""
    chain = (Stage("operator trackers", "/tf", 1.0), Stage("retarget", "retarget_node outputs", 3.0),
             Stage("world model", "/digital", 2.0), Stage("bridge camera relay", "/camera", 2.0))
    required = [RequiredStream("/camera", "canonical camera", 2.0)]

    def reading(last_arrival):
        stats = StreamStats()
        stats.add(last_arrival)
        return stats.reading(20.0, 20.0)

    readings = {"/tf": reading(19.9), "retarget_node outputs": reading(19.5), "/digital": reading(14.0),
                "/camera": reading(13.9)}
    assert stale_banner(readings, required, 60.0, {"/camera": chain}) == (
        "STALE: canonical camera (/camera): silent for 6.1 s, stalled stage: world model "
        "(/digital silent for 6.0 s, its input retarget fresh)")
    readings["/digital"] = reading(19.95)  # the model still streams: the relay stopped
    assert stale_banner(readings, required, 60.0, {"/camera": chain}).endswith(
        "stalled stage: bridge camera relay (/camera silent for 6.1 s, its input world model fresh)")
    readings["/tf"] = reading(10.0)  # the operator stopped first
    assert stale_banner(readings, required, 60.0, {"/camera": chain}).endswith(
        "stalled stage: operator trackers (/tf silent for 10.0 s)")
    del readings["/tf"]  # never came
    assert "stalled stage: operator trackers (/tf nothing received)" in stale_banner(readings, required, 60.0, {"/camera": chain})
    assert stale_banner(readings, required, 60.0) == "STALE: canonical camera (/camera): silent for 6.1 s"  # no chain known


def test_a_nodes_outputs_fall_silent_when_its_counter_stops_or_its_reports_stop():
    board = HealthBoard()
    assert board.outputs_reading("retarget_node", 10.0) is None
    board.on_status(status("retarget_node", 10.0, 1000))
    board.on_status(status("retarget_node", 11.0, 1200))
    assert board.outputs_reading("retarget_node", 11.5).silent_s == pytest.approx(0.5)
    board.on_status(status("retarget_node", 12.0, 1200))  # still reporting, nothing new
    board.on_status(status("retarget_node", 13.0, 1200))
    assert board.outputs_reading("retarget_node", 13.0).silent_s == pytest.approx(2.0)
    assert board.outputs_reading("retarget_node", 20.0).silent_s == pytest.approx(9.0)  # reports stopped too


def test_downscale_bounds_the_width_and_keeps_the_aspect():
    wide = np.random.default_rng(0).integers(0, 255, (720, 1280, 3), dtype=np.uint8)
    small = downscale(wide, 640)
    assert small.shape == (360, 640, 3) and small.dtype == np.uint8
    assert abs(float(small.mean()) - float(wide.mean())) < 1.0  # area averaging, not a crop
    narrow = wide[:, :320]
    assert downscale(narrow, 640) is narrow  # already small enough: no copy


@pytest.mark.parametrize("image, message", [
    (np.zeros((10, 10), np.uint8), r"expected an \(H, W, 3\) uint8 image, got \(10, 10\)"),
    (np.zeros((10, 10, 3), np.float32), "float32"),
])
def test_downscale_refuses_what_is_not_an_rgb_image(image, message):
    with pytest.raises(ValueError, match=message):
        downscale(image, 640)


def test_pacer_lets_through_at_most_its_rate():
    pacer = FramePacer(15.0)
    passed = sum(pacer.due(i / 100.0) for i in range(100))  # asked at 100 Hz for 1 s
    assert 14 <= passed <= 15
    with pytest.raises(ValueError, match="max_fps must be in"):
        FramePacer(30.0)


def hands_in_front_of_the_camera() -> np.ndarray:
    joints = np.zeros((2, 21, 3))
    joints[0, :, :] = (-0.1, 0.0, 0.5)  # left hand: 10 cm left of the optical axis, 50 cm ahead
    joints[0, :, 0] += np.linspace(0, 0.05, 21)
    joints[1, :, :] = (0.1, 0.0, 0.5)
    joints[1, :, 1] += np.linspace(0, 0.05, 21)
    return joints


def test_overlay_draws_the_skeleton_where_the_camera_sees_it_and_leaves_the_rest():
    image = np.full((240, 320, 3), 90, dtype=np.uint8)  # the 640x480 camera downscaled to 320 wide
    overlay = SkeletonOverlay()
    drawn = overlay.draw(image, hands_in_front_of_the_camera(), np.array([True, True]), np.full((2, 3), np.nan))
    camera = D435I_COLOR.scaled(320, 240)
    u, v = camera.project(np.array([[-0.1, 0.0, 0.5]]))[0]
    assert (drawn[int(v), int(u)] != 90).any()  # the left wrist is painted
    assert (drawn[5, 5] == 90).all() and (image == 90).all()  # far from the hands untouched; input not modified
    hidden = overlay.draw(image, hands_in_front_of_the_camera(), np.array([False, False]), np.full((2, 3), np.nan))
    assert (hidden == image).all()  # invalid hands draw nothing


# --- 3D pose ---------------------------------------------------------------------------------


def test_joint_poser_updates_by_name_and_keeps_the_rest():
    poser = JointPoser(["a", "b", "c"])
    assert poser.update(["c", "a", "unknown"], [0.3, 0.1, 9.0]).tolist() == [0.1, 0.0, 0.3]
    assert poser.update(["b"], [0.2]).tolist() == [0.1, 0.2, 0.3]


@pytest.mark.parametrize("names, positions, message", [
    (["a", "b"], [0.1, float("nan")], "non-finite joint position"),
    (["a"], [0.1, 0.2], "1 joint names but 2 positions"),
    (["x", "y"], [0.1, 0.2], "none of the 2 joint names is in the robot description"),
])
def test_joint_poser_rejects_a_bad_message_whole(names, positions, message):
    poser = JointPoser(["a", "b"])
    poser.update(["a", "b"], [1.0, 2.0])
    with pytest.raises(ValueError, match=message):
        poser.update(names, positions)
    assert poser.configuration.tolist() == [1.0, 2.0]  # unchanged


# --- health ----------------------------------------------------------------------------------


def status(source, stamp, outputs, latencies=(), faults=()):
    return StatusReport(source, stamp, outputs, dropped=1, rejected=0, latencies=latencies, faults=faults)


def test_loop_rate_comes_from_the_retarget_nodes_output_counter():
    board = HealthBoard()
    assert "waiting for two retarget_node status messages" in board.loop_rate_line()
    board.on_status(status("retarget_node", 10.0, 1000))
    board.on_status(status("retarget_node", 11.0, 1198))
    board.on_diagnostic(DiagnosticReport("rynn_bridge", 0, "ok", values={"dropped.command_deadlines_missed": "3"}))
    assert board.loop_rate_line() == "Action loop: 198 Hz (target 200 Hz), bridge missed 3 command deadlines"


def test_faults_come_from_status_and_from_diagnostics_in_error():
    board = HealthBoard()
    board.on_status(status("rynn_bridge", 1.0, 0, faults=("camera: digital camera stalled for 2.0 s",)))
    board.on_diagnostic(DiagnosticReport("rynn_bridge", 2, "digital camera stalled"))  # said once, by status
    board.on_diagnostic(DiagnosticReport("sim_robot", 2, "render failed"))
    board.on_diagnostic(DiagnosticReport("rynn_recorder", 1, "2 input(s) rejected"))  # WARN is not a fault
    assert board.faults() == ["rynn_bridge: camera: digital camera stalled for 2.0 s", "sim_robot: ERROR render failed"]


def test_stage_timings_table_lists_the_world_model_first_in_milliseconds():
    board = HealthBoard()
    board.on_status(status("retarget_node", 1.0, 0, latencies=(StageTiming("retarget", 0.001, 0.0012, 0.004),)))
    board.on_status(status("world_model_node", 1.0, 0, latencies=(StageTiming("dit", 0.05, 0.048, 0.09),)))
    table = board.timings_markdown().splitlines()
    assert table[2] == "| world_model_node | dit | 50.0 | 48.0 | 90.0 |"
    assert table[3] == "| retarget_node | retarget | 1.0 | 1.2 | 4.0 |"
    assert HealthBoard().timings_markdown() == "No stage timings yet."


# --- recording -------------------------------------------------------------------------------


def recorder_report(episode: str) -> DiagnosticReport:
    values = {"recording": episode, "mode": "digital", "idle_messages": "0"}
    if episode:
        values |= {"episode/joint_states.received": "120", "episode/joint_states.written": "119",
                   "episode/joint_states.lost": "1", "total/joint_states.received": "999"}
    return DiagnosticReport("rynn_recorder", 0, "ok", hardware_id="/data/bags", values=values)


def test_recording_board_shows_directory_elapsed_time_and_episode_counts():
    board = RecordingBoard()
    assert board.summary_markdown(0.0) == "**Not recording.**"
    board.on_recorder_diagnostic(recorder_report("episode_0001"), now=100.0)
    board.on_recorder_diagnostic(recorder_report("episode_0001"), now=101.0)  # same episode: clock keeps running
    lines = board.summary_markdown(112.4).splitlines()
    assert lines[0] == "**Recording** `/data/bags/episode_0001` for 12 s"
    assert lines[-1] == "| /joint_states | 120 | 119 | 1 |"  # the episode's counts, not the totals
    board.on_recorder_diagnostic(recorder_report(""), now=113.0)
    assert board.summary_markdown(113.0) == "**Not recording.**" and board.elapsed_s(113.0) is None


def test_a_start_answer_starts_the_clock_before_the_recorders_next_report():
    board = RecordingBoard()
    board.started("/data/bags/episode_0002", now=50.0)
    assert board.episode == "episode_0002" and board.elapsed_s(53.0) == pytest.approx(3.0)


def test_answers_say_what_happened_including_a_refusals_reason():
    assert describe_mode_answer("Real", False, "robot state unknown: no LCM state yet") == \
        "Real: REFUSED: robot state unknown: no LCM state yet"
    assert describe_mode_answer("Digital", True, "switched") == "Digital: accepted (switched)"
    summary = json.dumps({"episode": "episode_0003", "messages_written": 4321})
    assert describe_recorder_answer("stop", True, summary) == "stopped episode_0003: 4321 messages written"
    assert describe_recorder_answer("stop", True, "not json") == "stopped: not json"
    assert describe_recorder_answer("start", False, "already recording") == "start failed: already recording"


def test_one_call_per_control_is_in_flight_and_a_silent_one_is_given_up():
    pending = PendingCalls(timeout_s=5.0)
    assert pending.begin("mode", 0.0)
    assert not pending.begin("mode", 0.1)  # a second click (or browser) waits for the answer
    assert pending.begin("recorder", 0.1)  # other controls are independent
    assert pending.finish("mode") and not pending.finish("mode")
    assert pending.expired(4.0) == [] and pending.expired(5.2) == ["recorder"]
    assert not pending.busy("recorder") and pending.begin("recorder", 6.0)


# --- the page --------------------------------------------------------------------------------


def test_the_page_poses_every_joint_of_the_action_and_is_served_offline():
    """The 3D view's URDF has all 54 commanded joints, and the page (viser's bundled client)
    comes from the console itself, with nothing fetched from elsewhere."""
    import urllib.request

    from rynn_common.action_layout import joint_names
    from rynn_common.description import default_urdf_path
    from rynn_world.console.page import ConsoleActions, ConsolePage

    ignore = ConsoleActions(lambda *_: None, lambda *_: None, lambda: None, lambda _: None, lambda _: None)
    page = ConsolePage("127.0.0.1", 0, default_urdf_path(), ignore, jpeg_quality=70,
                       overlay_on=False)
    try:
        assert set(joint_names()) <= set(page.joint_names)
        pose = JointPoser(page.joint_names).update(joint_names(), np.linspace(-0.5, 0.5, 54))
        page.show_robot(pose, pose * 0.5)
        assert_frames_match_yourdfpy(page.robot, pose)
        assert_frames_match_yourdfpy(page.ghost, pose * 0.5)
        nudged = pose + np.where(np.arange(54) % 2 == 0, 0.002, 0.3)  # half the joints move less than the deadband
        page.show_robot(nudged, None)
        assert_frames_match_yourdfpy(page.robot, nudged, tolerance=np.deg2rad(0.5))
        html = urllib.request.urlopen(f"http://127.0.0.1:{page.port}/", timeout=30).read().decode()
        assert "<html" in html.lower() and "https://" not in html.split("<body", 1)[0]  # no CDN in the head
    finally:
        page.stop()


def test_with_the_robot_view_off_the_page_has_no_robot_to_draw():
    """robot_view false: the 3D view holds no robot meshes (nothing for a software-WebGL browser to
    redraw); the page still says why the view is empty."""
    from rynn_common.description import default_urdf_path
    from rynn_world.console.page import ConsoleActions, ConsolePage

    ignore = ConsoleActions(lambda *_: None, lambda *_: None, lambda: None, lambda _: None, lambda _: None)
    page = ConsolePage("127.0.0.1", 0, default_urdf_path(), ignore, jpeg_quality=70,
                       overlay_on=False, robot_view=False)
    try:
        assert page.robot is None and page.ghost is None and page.joint_names == ()
        scene_nodes = list(page.server._websock_server._broadcast_buffer.message_from_id.values())
        names = [getattr(message, "name", "") for message in scene_nodes]
        assert not any(name.startswith("/robot/measured") or name.startswith("/robot/commanded") for name in names), names
        assert "/robot/off" in names, names
    finally:
        page.stop()


def assert_frames_match_yourdfpy(view, configuration, tolerance: float = 1e-9):
    """Every joint frame the browsers got is yourdfpy's forward kinematics (up to the deadband)."""
    from viser.transforms import SO3

    urdf = view._urdf
    urdf.update_cfg(configuration)
    for joint, frame in zip(view._joint_map_values, view._joint_frames):
        expected = urdf.get_transform(joint.child, joint.parent)
        np.testing.assert_allclose(frame.position, expected[:3, 3], atol=1e-9)
        shown = SO3(np.asarray(frame.wxyz)).as_matrix()
        angle = np.arccos(np.clip((np.trace(shown.T @ expected[:3, :3]) - 1) / 2, -1, 1))
        assert angle <= tolerance + 1e-6, (joint.name, angle)
