"""Joint vectors for the 3D robot view from named joint states."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


class JointPoser:
    """Keeps one configuration in the URDF's actuated-joint order and updates it by name.

    Joints a message does not name keep their previous value (a hand-only or arm-only message
    still poses the rest); unknown names are ignored; a NaN or infinite position rejects the
    whole message (``ValueError``) so the view never shows a half-applied pose.
    """

    def __init__(self, joint_names: Sequence[str]):
        self.index = {name: i for i, name in enumerate(joint_names)}
        self.configuration = np.zeros(len(joint_names))

    def update(self, names: Sequence[str], positions: Sequence[float]) -> np.ndarray:
        if len(names) != len(positions):
            raise ValueError(f"{len(names)} joint names but {len(positions)} positions")
        if not all(math.isfinite(p) for p in positions):
            raise ValueError("non-finite joint position")
        matched = [(self.index[n], p) for n, p in zip(names, positions) if n in self.index]
        if not matched and names:
            raise ValueError(f"none of the {len(names)} joint names is in the robot description")
        for i, p in matched:
            self.configuration[i] = p
        return self.configuration
