"""The RealSense camera path without hardware: a recording made with pyrealsense2's software device and
recorder is played back through the ROS-free stream and through the node over real DDS."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

rs = pytest.importorskip("pyrealsense2")

from ros_test_tools import node_env, read_log, wait_until  # noqa: E402
from rynn_robot_bridge.realsense_source import CameraSourceError, RealSenseColorStream, RealSenseSettings, TimestampMapper  # noqa: E402

WIDTH, HEIGHT, FPS = 64, 48, 30
FRAMES = 60  # 2 s at 30 FPS: the node's subscriber has time to be discovered while it plays
FRAME_MS = 1000.0 / FPS
FIRST_MS = 5000.0  # the camera's hardware clock at the first frame
COEFFS = [0.12, -0.25, 0.001, -0.002, 0.1]
TIMEOUT = 60.0


def frame_pixels(index: int, width: int = WIDTH, height: int = HEIGHT) -> np.ndarray:
    """A frame that says which one it is: red = index, green = a column ramp, blue = 7."""
    rgb = np.zeros((height, width, 3), np.uint8)
    rgb[..., 0] = index
    rgb[..., 1] = (np.arange(width) * 3 % 256).astype(np.uint8)[None, :]
    rgb[..., 2] = 7
    return rgb


def record_software_camera(path: Path, frames: int = FRAMES, width: int = WIDTH, height: int = HEIGHT) -> Path:
    """A librealsense recording of a software colour sensor (what rs.recorder writes for a real camera)."""
    device = rs.software_device()
    sensor = device.add_sensor("RGB Camera")
    intrinsics = rs.intrinsics()
    intrinsics.width, intrinsics.height = width, height
    intrinsics.fx, intrinsics.fy, intrinsics.ppx, intrinsics.ppy = 52.0, 53.0, 31.5, 23.25
    intrinsics.model, intrinsics.coeffs = rs.distortion.brown_conrady, COEFFS
    stream = rs.video_stream()
    stream.type, stream.index, stream.uid = rs.stream.color, 0, 0
    stream.width, stream.height, stream.fps, stream.bpp, stream.fmt = width, height, FPS, 3, rs.format.rgb8
    stream.intrinsics = intrinsics
    profile = sensor.add_video_stream(stream)
    device.register_info(rs.camera_info.serial_number, "000111222")
    device.register_info(rs.camera_info.name, "Software D435i")
    _recorder = rs.recorder(str(path), device)  # records while it lives
    queue = rs.frame_queue(frames)
    sensor.open(profile)
    sensor.start(queue)
    started = time.monotonic()
    for index in range(frames):
        # Paced like a camera: the recorder stores arrival times and playback replays them in real time.
        time.sleep(max(0.0, started + index / FPS - time.monotonic()))
        frame = rs.software_video_frame()
        frame.pixels, frame.bpp, frame.stride = frame_pixels(index, width, height), 3, width * 3
        frame.timestamp, frame.domain, frame.frame_number = FIRST_MS + index * FRAME_MS, rs.timestamp_domain.hardware_clock, index
        frame.profile = profile.as_video_stream_profile()
        sensor.on_video_frame(frame)
        assert queue.wait_for_frame(5000)
    sensor.stop()
    sensor.close()
    return path


def record_in_child(path: Path, frames: int = FRAMES, width: int = WIDTH, height: int = HEIGHT) -> Path:
    """``record_software_camera`` in a child process: librealsense completes the file only when the
    recorder is destroyed, which a process exit guarantees (in-process, buffered frames were missing)."""
    script = ("import sys, pathlib, test_realsense_camera as t; "
              "t.record_software_camera(pathlib.Path(sys.argv[1]), *map(int, sys.argv[2:]))")
    env = node_env()
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), str(Path(read_log.__code__.co_filename).parent),
                                         env["PYTHONPATH"]])
    subprocess.run([sys.executable, "-c", script, str(path), str(frames), str(width), str(height)], env=env, check=True,
                   timeout=TIMEOUT)
    return path


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    return record_in_child(tmp_path_factory.mktemp("realsense") / "head_camera.db3")


def test_timestamps_map_like_realsense2_camera():
    host = TimestampMapper(now_ns=lambda: 10**18)
    assert host.to_ros_ns(1_700_000_000_123.5, "global_time") == 1_700_000_000_123_500_000  # already host ms
    hardware = TimestampMapper(now_ns=lambda: 10**18)
    assert hardware.to_ros_ns(FIRST_MS, "hardware_clock") == 10**18  # first frame anchored at now
    assert hardware.to_ros_ns(FIRST_MS + 33.5, "hardware_clock") == 10**18 + 33_500_000  # camera spacing kept
    restarted = TimestampMapper(now_ns=iter([10**18, 2 * 10**18]).__next__)
    restarted.to_ros_ns(FIRST_MS + 500, "hardware_clock")
    assert restarted.to_ros_ns(FIRST_MS, "hardware_clock") == 2 * 10**18  # clock restarted: re-anchored at now
    late = TimestampMapper(now_ns=iter([10**18, 10**18 - 5]).__next__)  # first anchor taken late: now is "behind"
    last = late.to_ros_ns(FIRST_MS + 500, "hardware_clock")
    assert late.to_ros_ns(FIRST_MS, "hardware_clock") == last + 1  # never backwards


def test_recording_plays_back_with_the_devices_calibration(recording):
    stream = RealSenseColorStream(RealSenseSettings(recording=str(recording)),
                                  TimestampMapper(now_ns=lambda: 42 * 10**9))
    calibration = stream.open()
    frames = []
    try:
        while len(frames) < FRAMES:
            frame = stream.read(2.0)
            if frame is not None:
                frames.append(frame)
            elif stream.finished:
                break
    finally:
        stream.close()
    assert (stream.device_name, stream.serial_number) == ("Software D435i", "000111222")
    k = calibration.intrinsics
    assert (k.width, k.height, k.fx, k.fy, k.cx, k.cy) == (WIDTH, HEIGHT, 52.0, 53.0, 31.5, 23.25)
    assert calibration.distortion_model == "plumb_bob"
    np.testing.assert_allclose(calibration.distortion, COEFFS, rtol=1e-6)
    numbers = np.array([f.frame_number for f in frames])
    # Real-time playback, like a camera: a loaded machine may drop a frame, never reorder or invent one.
    assert numbers[0] == 0 and len(frames) >= 0.8 * FRAMES and (np.diff(numbers) > 0).all(), numbers
    for frame in frames:
        np.testing.assert_array_equal(frame.rgb, frame_pixels(frame.frame_number))
    stamps = np.array([f.stamp_ns for f in frames])
    assert stamps[0] == 42 * 10**9  # hardware clock anchored at the first frame
    # the camera's spacing (33.3 ms per frame number), not the arrival's
    np.testing.assert_allclose(stamps - stamps[0], numbers * FRAME_MS * 1e6, atol=2e3)


def test_missing_or_unreadable_recording_and_missing_device_are_clear_errors(tmp_path):
    with pytest.raises(CameraSourceError, match="RealSense recording not found: .*nothing.db3"):
        RealSenseColorStream(RealSenseSettings(recording=str(tmp_path / "nothing.db3"))).open()
    garbage = tmp_path / "garbage.db3"
    garbage.write_bytes(b"not a recording at all")
    with pytest.raises(CameraSourceError, match=r"cannot stream colour from recording .*garbage.db3: .*"):
        RealSenseColorStream(RealSenseSettings(recording=str(garbage))).open()
    if len(rs.context().query_devices()):
        pytest.skip("a RealSense is connected: the no-device error cannot be provoked here")
    with pytest.raises(CameraSourceError, match="no RealSense device found"):
        RealSenseColorStream(RealSenseSettings(serial_number="123")).open()


@pytest.mark.ros
def test_node_publishes_the_recording_as_realsense2_camera_does(ros_node, start_process, recording):
    """Played in a loop (the subscriber may be discovered after the first pass): every frame arrives as
    rgb8 in camera_color_optical_frame with its CameraInfo, stamps follow the camera's clock, and a
    restart of that clock (the next pass) never makes ROS time run backwards."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import CameraInfo, Image

    from rynn_robot_bridge.camera_messages import image_to_rgb

    wanted = FRAMES + 20  # more than one pass: includes a restart of the camera clock
    images, infos = [], []
    reliable = QoSProfile(depth=FRAMES, reliability=ReliabilityPolicy.RELIABLE)
    ros_node.create_subscription(Image, "/camera/camera/color/image_raw", images.append, reliable)
    ros_node.create_subscription(CameraInfo, "/camera/camera/color/camera_info", infos.append, reliable)
    node = start_process(["-m", "rynn_robot_bridge.nodes.realsense_camera_node", "--ros-args",
                          "-p", f"rosbag_filename:={recording}", "-p", "playback_repeat:=true"], "realsense_camera")

    assert wait_until(lambda: len(images) >= wanted, TIMEOUT, spin=ros_node.spin_once), (len(images), read_log(node))
    wait_until(lambda: len(infos) >= len(images), 5.0, spin=ros_node.spin_once)
    first = images[0]
    assert (first.encoding, first.header.frame_id, first.width, first.height, first.step) == (
        "rgb8", "camera_color_optical_frame", WIDTH, HEIGHT, WIDTH * 3)
    indices = np.array([int(image_to_rgb(m)[0, 0, 0]) for m in images])
    for image, index in zip(images, indices):
        np.testing.assert_array_equal(image_to_rgb(image), frame_pixels(index))
    info = {(m.header.stamp.sec, m.header.stamp.nanosec): m for m in infos}
    stamps = []
    for image in images:
        key = (image.header.stamp.sec, image.header.stamp.nanosec)
        assert key in info, "every image has the CameraInfo of the same stamp"
        stamps.append(key[0] * 10**9 + key[1])
    stamps = np.array(stamps)
    assert (np.diff(stamps) > 0).all(), "ROS time ran backwards"
    wraps = np.flatnonzero(np.diff(indices) < 0)
    assert len(wraps) >= 1, indices  # the recording started over at least once
    within = np.diff(indices) > 0  # in one pass: hardware timestamps, 33.3 ms per frame number, not arrival times
    np.testing.assert_allclose(np.diff(stamps)[within], np.diff(indices)[within] * FRAME_MS * 1e6, atol=2e3)
    camera_info = info[(first.header.stamp.sec, first.header.stamp.nanosec)]
    assert camera_info.distortion_model == "plumb_bob" and camera_info.header.frame_id == "camera_color_optical_frame"
    np.testing.assert_allclose(camera_info.d, COEFFS, rtol=1e-6)
    np.testing.assert_allclose(camera_info.k, [52.0, 0, 31.5, 0, 53.0, 23.25, 0, 0, 1])
    np.testing.assert_allclose(camera_info.p, [52.0, 0, 31.5, 0, 0, 53.0, 23.25, 0, 0, 0, 1, 0])


@pytest.mark.ros
@pytest.mark.parametrize("arguments, message", [
    (["-p", "rosbag_filename:=/nonexistent/head.db3"], "realsense_camera_node: RealSense recording not found: /nonexistent/head.db3"),
    (["-p", "rgb_camera.color_profile:=640x480"], "rgb_camera.color_profile '640x480' must be 'width,height,fps'"),
])
def test_node_stops_with_one_clear_line(arguments, message):
    result = subprocess.run([sys.executable, "-m", "rynn_robot_bridge.nodes.realsense_camera_node", "--ros-args", *arguments],
                            env=node_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode != 0 and message in result.stderr
    assert "Traceback" not in result.stderr
