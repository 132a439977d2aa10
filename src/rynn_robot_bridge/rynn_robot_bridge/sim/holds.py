"""Whether the robot picked an object up or only pushed it: how long it was held in the air.

An object is *held* while it touches the robot and nothing else (not the table, the plate, another
object): a hand carries it. A fruit knocked or rolled off a plate ends where a picked one ends, so a
task whose judge asks for a pick ("pick an apple and a banana from a plate") needs this record of
the whole episode, not only its final state.
"""

from __future__ import annotations

import mujoco
import numpy as np


def robot_bodies(model: mujoco.MjModel) -> np.ndarray:
    """(nbody,) bool: bodies of the robot, i.e. below a root that is fixed to the world (free objects are
    their own roots; the world's own geoms, table and floor, belong to body 0)."""
    free = np.zeros(model.nbody, dtype=bool)
    free[model.jnt_bodyid[model.jnt_type == mujoco.mjtJoint.mjJNT_FREE]] = True
    roots = model.body_rootid
    return (roots != 0) & ~free[roots]


def held_bodies(contact_bodies: np.ndarray, watched: np.ndarray, robot: np.ndarray) -> np.ndarray:
    """Which of the ``watched`` body ids touch the robot and nothing else, given the (ncon, 2) body ids of
    the current contacts and the robot mask (``robot_bodies``)."""
    held = np.zeros(len(watched), dtype=bool)
    for i, body in enumerate(watched):
        rows = contact_bodies[(contact_bodies == body).any(axis=1)]
        if len(rows):
            others = np.where(rows[:, 0] == body, rows[:, 1], rows[:, 0])
            held[i] = bool(robot[others].all())
    return held


class HoldWatch:
    """Per watched object: seconds held in the air and the most it was raised (m above its start) while held."""

    def __init__(self, model: mujoco.MjModel, start_heights: dict[str, float]):
        self._model = model
        self._robot = robot_bodies(model)
        self.names = list(start_heights)
        self._bodies = np.array([model.body(name).id for name in self.names])
        self._start = np.array([start_heights[name] for name in self.names], dtype=float)
        self.reset()

    def reset(self) -> None:
        self.held_s = dict.fromkeys(self.names, 0.0)
        self.raised_m = dict.fromkeys(self.names, 0.0)

    def update(self, data: mujoco.MjData, dt: float) -> None:
        """Account one physics step of ``dt`` seconds (call after ``mj_step``)."""
        if data.ncon == 0:
            return
        contacts = self._model.geom_bodyid[data.contact.geom[: data.ncon]]
        held = held_bodies(contacts, self._bodies, self._robot)
        for i in np.flatnonzero(held):
            name = self.names[i]
            self.held_s[name] += dt
            self.raised_m[name] = max(self.raised_m[name], float(data.xpos[self._bodies[i], 2] - self._start[i]))

    def summary(self) -> dict:
        return {name: {"held_s": round(self.held_s[name], 3), "raised_m": round(self.raised_m[name], 4)}
                for name in self.names}
