"""Vive trackers through OpenVR/SteamVR (``pip install openvr``; SteamVR running).

Trackers are matched to body roles by serial number (config); hands come from
another source (gloves), so frames from here carry trackers only.
"""

from __future__ import annotations

import time
from typing import Iterator

import numpy as np

from rynn_retarget.operator.frame import TRACKER_NAMES, OperatorFrame


class DeviceUnavailableError(RuntimeError):
    """The device library or runtime is missing; the message says what to install or start."""


class OpenVrTrackerSource:
    def __init__(self, serials: dict[str, str], rate_hz: float = 120.0):
        unknown = set(serials) - set(TRACKER_NAMES)
        if unknown:
            raise ValueError(f"unknown tracker roles {sorted(unknown)}; expected {TRACKER_NAMES}")
        try:
            import openvr  # optional dependency, only needed for live trackers
        except ImportError as error:
            raise DeviceUnavailableError(
                "Vive trackers need the 'openvr' Python package (pip install openvr) and SteamVR; "
                "use the UDP ingest (rynn_retarget.operator.udp) when the trackers run on another PC"
            ) from error
        try:
            self._system = openvr.init(openvr.VRApplication_Other)
        except openvr.OpenVRError as error:
            raise DeviceUnavailableError(f"SteamVR is not running or found no headset/trackers: {error}") from error
        self._openvr = openvr
        self._serials = serials
        self._period = 1.0 / rate_hz
        self._closed = False

    def _poses_by_serial(self) -> dict[str, np.ndarray]:
        openvr = self._openvr
        poses = self._system.getDeviceToAbsoluteTrackingPose(
            openvr.TrackingUniverseStanding, 0, openvr.k_unMaxTrackedDeviceCount
        )
        result = {}
        for index, tracked in enumerate(poses):
            if not tracked.bPoseIsValid:
                continue
            serial = self._system.getStringTrackedDeviceProperty(index, openvr.Prop_SerialNumber_String)
            matrix = np.eye(4)
            matrix[:3, :] = np.array([list(row) for row in tracked.mDeviceToAbsoluteTracking.m])
            result[serial] = matrix
        return result

    def frames(self) -> Iterator[OperatorFrame]:
        while not self._closed:
            by_serial = self._poses_by_serial()
            trackers = {role: by_serial[serial] for role, serial in self._serials.items() if serial in by_serial}
            yield OperatorFrame(stamp=time.monotonic(), trackers=trackers)
            time.sleep(self._period)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._openvr.shutdown()
