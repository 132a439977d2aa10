"""The fixed 54-D absolute joint layout shared by every Rynn component.

One place defines it so the retargeter, the bridge, the simulated robot, the
recorder and the dataset export cannot disagree about which index is which
joint. The order mirrors ``rynn_teleop_msgs/RobotAction``:
[left arm 7, right arm 7, left hand 20, right hand 20], radians.
"""

from __future__ import annotations

import numpy as np

ARM_DOF = 7
HAND_DOF = 20
ACTION_DIM = 2 * ARM_DOF + 2 * HAND_DOF  # 54

LEFT_ARM = slice(0, ARM_DOF)
RIGHT_ARM = slice(ARM_DOF, 2 * ARM_DOF)
LEFT_HAND = slice(2 * ARM_DOF, 2 * ARM_DOF + HAND_DOF)
RIGHT_HAND = slice(2 * ARM_DOF + HAND_DOF, ACTION_DIM)

SIDES = ("left", "right")


def arm_joint_names(side: str) -> list[str]:
    """``{side}_arm_joint1..7``: shoulder 1-3, elbow 4, wrist 5-7."""
    _check_side(side)
    return [f"{side}_arm_joint{i}" for i in range(1, ARM_DOF + 1)]


def hand_joint_names(side: str) -> list[str]:
    """WUJI naming: ``{side}_finger{f}_joint{j}``, finger 1 is the thumb."""
    _check_side(side)
    return [f"{side}_finger{f}_joint{j}" for f in range(1, 6) for j in range(1, 5)]


def joint_names() -> list[str]:
    """All 54 joint names in action order."""
    return (
        arm_joint_names("left")
        + arm_joint_names("right")
        + hand_joint_names("left")
        + hand_joint_names("right")
    )


def validate_action(values) -> np.ndarray:
    """Return ``values`` as a float64 (54,) array or raise ``ValueError``.

    Rejects a wrong length and any NaN/inf: a command with either must never
    reach a robot.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] != ACTION_DIM:
        raise ValueError(
            f"a RobotAction needs exactly {ACTION_DIM} joint positions "
            f"[left arm {ARM_DOF}, right arm {ARM_DOF}, left hand {HAND_DOF}, "
            f"right hand {HAND_DOF}], got shape {arr.shape}"
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        names = joint_names()
        which = ", ".join(names[i] for i in np.flatnonzero(bad)[:5])
        raise ValueError(f"RobotAction contains NaN/inf at {int(bad.sum())} joint(s): {which}")
    return arr


def split_action(action) -> dict[str, np.ndarray]:
    """Views of a validated action by part: left_arm, right_arm, left_hand, right_hand."""
    arr = validate_action(action)
    return {
        "left_arm": arr[LEFT_ARM],
        "right_arm": arr[RIGHT_ARM],
        "left_hand": arr[LEFT_HAND],
        "right_hand": arr[RIGHT_HAND],
    }


def join_action(left_arm, right_arm, left_hand, right_hand) -> np.ndarray:
    """Concatenate the four parts into one validated 54-D action."""
    return validate_action(np.concatenate([left_arm, right_arm, left_hand, right_hand]))


def _check_side(side: str) -> None:
    if side not in SIDES:
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
