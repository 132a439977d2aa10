"""What the simulated robot's task scenes and the operator's task plans both know of a scene.

The robot side (``rynn_robot_bridge.sim.scenes``) builds each task's objects and reports where they
are as a ``SceneState``; the operator side (``rynn_retarget.operator.task_plan``) plans from it.
Plain data, so neither side imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TASKS = ("dual_picking", "block_pushing", "bimanual_lifting", "lid_placement")  # the paper's evaluation tasks

# Block pushing's three zones on the table (base_link, m): the block starts in the left one and is pushed
# into the right one.
ZONE_HALF = (0.07, 0.07)
ZONE_Y = {"left": 0.2, "centre": 0.0, "right": -0.2}
ZONE_X = 0.38


@dataclass(frozen=True)
class SceneObject:
    """A free object at episode start: origin (base_link, m), yaw (rad), half extents (m) and, if it has
    a handle, the point to hold it by (object frame)."""

    name: str
    position: np.ndarray
    yaw: float = 0.0
    half_extents: np.ndarray = field(default_factory=lambda: np.zeros(3))
    grip_point: np.ndarray | None = None


@dataclass(frozen=True)
class SceneState:
    task: str
    objects: dict  # name -> SceneObject

    def object(self, name: str) -> SceneObject:
        if name not in self.objects:
            raise ValueError(f"scene {self.task!r} has no object {name!r} (has {sorted(self.objects)})")
        return self.objects[name]
