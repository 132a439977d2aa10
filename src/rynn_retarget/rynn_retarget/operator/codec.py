"""JSON form of an OperatorFrame, shared by the session file and the UDP ingest.

    {"stamp": 12.5,
     "trackers": {"chest": [16 floats, row-major 4x4], ...},        # absent tracker = missing
     "hands": {"left": {"points": [63 floats], "confidence": [21], "valid": true}, "right": {...}}}

Python's JSON writes floats with ``repr``, so a decode of an encode is exact.
"""

from __future__ import annotations

import numpy as np

from rynn_retarget.operator.frame import HAND_POINTS, TRACKER_NAMES, HandSkeleton, OperatorFrame


def frame_to_dict(frame: OperatorFrame) -> dict:
    return {
        "stamp": float(frame.stamp),
        "trackers": {
            name: np.asarray(pose, dtype=np.float64).reshape(16).tolist()
            for name, pose in frame.trackers.items()
        },
        "hands": {
            side: {
                "points": np.asarray(hand.points, dtype=np.float64).reshape(-1).tolist(),
                "confidence": np.asarray(hand.confidence, dtype=np.float64).tolist(),
                "valid": bool(hand.valid),
            }
            for side, hand in (("left", frame.left_hand), ("right", frame.right_hand))
        },
    }


def frame_from_dict(data: dict) -> OperatorFrame:
    """Raises ``ValueError`` with the offending field for malformed input."""
    if not isinstance(data, dict) or "stamp" not in data:
        raise ValueError("operator frame needs a 'stamp'")
    trackers = {}
    for name, values in (data.get("trackers") or {}).items():
        if name not in TRACKER_NAMES:
            raise ValueError(f"unknown tracker {name!r}; expected one of {TRACKER_NAMES}")
        trackers[name] = _array(values, 16, f"trackers.{name}").reshape(4, 4)
    frame = OperatorFrame(stamp=float(data["stamp"]), trackers=trackers)
    for side, hand in (data.get("hands") or {}).items():
        if side not in ("left", "right"):
            raise ValueError(f"unknown hand {side!r}")
        skeleton = HandSkeleton(
            points=_array(hand.get("points"), HAND_POINTS * 3, f"hands.{side}.points").reshape(HAND_POINTS, 3),
            confidence=_array(hand.get("confidence", [1.0] * HAND_POINTS), HAND_POINTS, f"hands.{side}.confidence"),
            valid=bool(hand.get("valid", True)),
        )
        setattr(frame, f"{side}_hand", skeleton)
    return frame


def _array(values, size: int, where: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: not a list of numbers") from error
    if array.size != size:
        raise ValueError(f"{where}: expected {size} numbers, got {array.size}")
    return array
