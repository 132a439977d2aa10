"""The head camera's colour stream from a RealSense, with pyrealsense2 (no ROS, no realsense2_camera).

Opens a device by serial number (or the first one found), or plays back a
recording made by librealsense's recorder (``rs.recorder`` / ``ros2 bag``-style
``.db3`` for librealsense >= 2.57, ``.bag`` before), and yields RGB frames with
the device's intrinsics and distortion and a ROS time for each frame, mapped
from the frame's timestamp the way realsense2_camera maps it:

- global or system time (the default on a device: ``global_time_enabled``):
  already host time in ms since the epoch;
- hardware clock (recordings, devices without global time): the camera's own
  ms counter, anchored to the host clock at the first frame, so frame spacing
  is the camera's, not the arrival jitter's.

Every failure to get a stream is a ``CameraSourceError`` that says what was
looked for and what was found.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rynn_common.description import CameraIntrinsics


class CameraSourceError(RuntimeError):
    """No usable colour stream: the message names the device, file or format and why."""


@dataclass(frozen=True)
class RealSenseSettings:
    serial_number: str = ""  # empty: the first device found
    recording: str = ""  # a file to play back instead of a device
    width: int = 640
    height: int = 480
    fps: int = 30
    real_time_playback: bool = True  # a recording plays at its recorded pace
    repeat_playback: bool = False  # a recording starts over at its end


@dataclass(frozen=True)
class ColorCalibration:
    """What CameraInfo needs: pinhole intrinsics plus the distortion model and coefficients."""

    intrinsics: CameraIntrinsics
    distortion_model: str  # sensor_msgs name: "plumb_bob" (Brown-Conrady family) or "equidistant"
    distortion: tuple[float, ...]


@dataclass(frozen=True)
class ColorFrame:
    rgb: np.ndarray  # (H, W, 3) uint8
    stamp_ns: int  # ROS time of the exposure
    frame_number: int


class TimestampMapper:
    """Frame timestamp (ms, librealsense domain) -> ROS time (ns), as realsense2_camera does it."""

    HOST_DOMAINS = ("global_time", "system_time")

    def __init__(self, now_ns=time.time_ns):
        self._now_ns = now_ns
        self._offset_ns: int | None = None
        self._last_camera_ns: int | None = None

    def to_ros_ns(self, timestamp_ms: float, domain: str) -> int:
        camera_ns = int(round(timestamp_ms * 1000)) * 1000  # via whole µs: ms since 1970 in a double has no ns digits
        if domain in self.HOST_DOMAINS:
            return camera_ns
        if self._offset_ns is None:  # hardware clock: its first frame is anchored at the host's now
            self._offset_ns = self._now_ns() - camera_ns
        elif camera_ns < self._last_camera_ns:
            # the camera clock restarted (device reset, a recording played over): anchor again, but
            # never before the last stamp (the first anchor may have been taken late, under load)
            last_ros_ns = self._last_camera_ns + self._offset_ns
            self._offset_ns = max(self._now_ns(), last_ros_ns + 1) - camera_ns
        self._last_camera_ns = camera_ns
        return camera_ns + self._offset_ns


def calibration_from(rs, intrinsics) -> ColorCalibration:
    """pyrealsense2 intrinsics -> ``ColorCalibration`` (realsense2_camera's CameraInfo convention)."""
    model = "equidistant" if intrinsics.model == rs.distortion.kannala_brandt4 else "plumb_bob"
    return ColorCalibration(
        intrinsics=CameraIntrinsics(intrinsics.width, intrinsics.height, intrinsics.fx, intrinsics.fy,
                                    intrinsics.ppx, intrinsics.ppy),
        distortion_model=model,
        distortion=tuple(float(c) for c in intrinsics.coeffs),
    )


class RealSenseColorStream:
    """``open()`` -> calibration; ``read()`` -> the next frame (None on timeout); ``finished`` at a recording's end."""

    def __init__(self, settings: RealSenseSettings, timestamps: TimestampMapper | None = None):
        import pyrealsense2 as rs  # imported here so a camera-less install never needs it

        self.rs = rs
        self.settings = settings
        self.timestamps = timestamps or TimestampMapper()
        self.pipeline = rs.pipeline()
        self.device_name = ""
        self.serial_number = ""
        self._playback = None
        self._started = False

    def open(self) -> ColorCalibration:
        rs, settings = self.rs, self.settings
        config = rs.config()
        if settings.recording:
            path = Path(settings.recording).expanduser()
            if not path.is_file():
                raise CameraSourceError(f"RealSense recording not found: {path}")
            config.enable_device_from_file(str(path), repeat_playback=settings.repeat_playback)
            config.enable_stream(rs.stream.color)
        else:
            config.enable_device(self._choose_serial())
            config.enable_stream(rs.stream.color, settings.width, settings.height, rs.format.rgb8, settings.fps)
        try:
            profile = self.pipeline.start(config)
        except RuntimeError as exc:
            source = f"recording {settings.recording}" if settings.recording else f"RealSense {self.serial_number}"
            raise CameraSourceError(f"cannot stream colour from {source}: {exc}") from exc
        self._started = True
        device = profile.get_device()
        self.device_name = device.get_info(rs.camera_info.name)
        self.serial_number = device.get_info(rs.camera_info.serial_number)
        if settings.recording:
            self._playback = device.as_playback()
            self._playback.set_real_time(settings.real_time_playback)
        else:
            self._enable_global_time(device)
        stream = profile.get_stream(rs.stream.color).as_video_stream_profile()
        if stream.format() not in (rs.format.rgb8, rs.format.bgr8):
            self.close()
            raise CameraSourceError(f"colour stream of {self.device_name} is {stream.format()}, expected rgb8 or bgr8")
        return calibration_from(rs, stream.get_intrinsics())

    def _choose_serial(self) -> str:
        found = [d.get_info(self.rs.camera_info.serial_number) for d in self.rs.context().query_devices()]
        wanted = self.settings.serial_number
        if not found:
            raise CameraSourceError("no RealSense device found (plugged in? USB permissions/udev rules for librealsense?)")
        if wanted and wanted not in found:
            raise CameraSourceError(f"no RealSense with serial number {wanted}; found {', '.join(found)}")
        self.serial_number = wanted or found[0]
        return self.serial_number

    def _enable_global_time(self, device) -> None:
        """Host-clock timestamps (realsense2_camera's default) where the colour sensor supports them."""
        for sensor in device.query_sensors():
            if sensor.supports(self.rs.option.global_time_enabled):
                sensor.set_option(self.rs.option.global_time_enabled, 1)

    @property
    def finished(self) -> bool:
        """A recording played to its end (a device never finishes)."""
        return self._playback is not None and self._playback.current_status() == self.rs.playback_status.stopped

    def read(self, timeout_s: float = 1.0) -> ColorFrame | None:
        ok, frames = self.pipeline.try_wait_for_frames(int(timeout_s * 1000))
        if not ok:
            return None
        frame = frames.get_color_frame()
        if not frame:
            return None
        pixels = np.asanyarray(frame.get_data())  # a view of librealsense's frame memory
        if frame.get_profile().format() == self.rs.format.bgr8:
            pixels = pixels[:, :, ::-1]
        domain = frame.get_frame_timestamp_domain().name
        # A copy: librealsense has a small pool of frames and stops delivering while views hold them.
        return ColorFrame(np.array(pixels, dtype=np.uint8, order="C", copy=True),
                          self.timestamps.to_ros_ns(frame.get_timestamp(), domain), int(frame.get_frame_number()))

    def close(self) -> None:
        if self._started:
            self._started = False
            self.pipeline.stop()
