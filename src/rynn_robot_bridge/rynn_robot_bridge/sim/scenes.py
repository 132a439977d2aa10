"""The paper's four evaluation tasks (Sec. 5.2) as MuJoCo scenes with seeded random object poses.

Each scene adds free-floating objects (contacts and friction simulated) to
the robot spec before compilation, samples their initial planar pose (x, y,
yaw) from its own ranges, and owns a success check on the simulated state so
the episode generator labels episodes the way a human judge would. The task
names, the block-pushing zones and the ``SceneState`` the operator plans from
are ``rynn_common.task_scenes``, shared with the operator side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import mujoco
import numpy as np

from rynn_common.task_scenes import TASKS, ZONE_HALF, ZONE_X, ZONE_Y, SceneObject, SceneState
from rynn_robot_bridge.sim.holds import HoldWatch
from rynn_robot_bridge.sim.robot_model import WORLD_BITS

AT_REST_SPEED = 0.05  # m/s: an object moving slower than this counts as placed
PLUSH_ROLLING_FRICTION = 0.02  # m: rolling it takes a push of ~7 N cm, it does not rock on its own
APPLE_ROLLING_FRICTION = 0.008  # m: about 2 m/s^2 of rolling deceleration, an apple stops within centimetres
# Picked, not pushed: held in the air by the robot (touching nothing else) this long, raised this high meanwhile.
PICK_HELD_S = 0.3
PICK_RAISED_M = 0.03


@dataclass
class ObjectPlacement:
    """Where a free object starts: sampled xy (m) and yaw (rad), fixed height of its centre; its
    half extents (m, object frame) are what an operator sees of its size."""

    name: str
    xy: np.ndarray
    yaw: float
    z: float
    half_extents: tuple = (0.0, 0.0, 0.0)
    grip_point: tuple | None = None  # where a hand holds it (a handle), object frame


@dataclass
class TaskScene:
    name: str
    placements: list[ObjectPlacement] = field(default_factory=list)
    check: Callable[["TaskScene", mujoco.MjModel, mujoco.MjData], bool] | None = None
    parameters: dict = field(default_factory=dict)  # scene geometry the check needs
    picked: tuple = ()  # objects the task must pick up (``was_picked``), not push or knock
    holds: HoldWatch | None = None  # their hold record, once ``watch`` has the compiled model

    def watch(self, model: mujoco.MjModel) -> None:
        """Start recording how the ``picked`` objects are held (``observe`` after every physics step)."""
        if self.picked:
            self.holds = HoldWatch(model, {p.name: p.z for p in self.placements if p.name in self.picked})

    def observe(self, data: mujoco.MjData, dt: float) -> None:
        if self.holds is not None:
            self.holds.update(data, dt)

    def was_picked(self, name: str) -> bool:
        """Held in the air by the robot for ``PICK_HELD_S`` and raised ``PICK_RAISED_M`` meanwhile."""
        if self.holds is None:
            raise RuntimeError(f"scene {self.name!r} does not watch {name!r} (watch() the compiled model first)")
        return self.holds.held_s[name] >= PICK_HELD_S and self.holds.raised_m[name] >= PICK_RAISED_M

    def place_objects(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        """Write the sampled initial poses into ``data`` (objects at rest); the hold record starts over."""
        for placement in self.placements:
            set_object_pose(model, data, placement.name, [*placement.xy, placement.z], yaw_quat(placement.yaw))
        if self.holds is not None:
            self.holds.reset()

    def success(self, model: mujoco.MjModel, data: mujoco.MjData) -> bool:
        return bool(self.check(self, model, data)) if self.check else False

    def object_names(self) -> list[str]:
        return [p.name for p in self.placements]

    def scale(self, factor: float) -> None:
        """Follow objects whose every length was scaled by ``factor`` (heights, sizes, check parameters)."""
        for placement in self.placements:
            placement.z *= factor
            placement.half_extents = tuple(factor * h for h in placement.half_extents)
            if placement.grip_point is not None:
                placement.grip_point = tuple(factor * g for g in placement.grip_point)
        self.parameters = {key: (tuple(factor * v for v in value) if isinstance(value, tuple) else factor * value)
                           for key, value in self.parameters.items()}

    def state(self, data: mujoco.MjData) -> SceneState:
        """The objects where they are now (the task operator plans from this at episode start)."""
        objects = {}
        for placement in self.placements:
            body = data.body(placement.name)
            axis_x = body.xmat.reshape(3, 3)[:, 0]
            objects[placement.name] = SceneObject(placement.name, body.xpos.copy(),
                                                  float(np.arctan2(axis_x[1], axis_x[0])),
                                                  np.asarray(placement.half_extents, dtype=float),
                                                  None if placement.grip_point is None else np.asarray(placement.grip_point))
        return SceneState(self.name, objects)


def yaw_quat(yaw: float) -> np.ndarray:
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def set_object_pose(model, data, name: str, position, quat) -> None:
    """Teleport a free object (used for resets and for testing the success checks)."""
    joint = model.body(name).jntadr[0]
    qpos, dof = model.jnt_qposadr[joint], model.jnt_dofadr[joint]
    data.qpos[qpos : qpos + 3] = position
    data.qpos[qpos + 3 : qpos + 7] = quat
    data.qvel[dof : dof + 6] = 0.0


def object_position(data, name: str) -> np.ndarray:
    return data.body(name).xpos.copy()


def object_speed(model, data, name: str) -> float:
    dof = model.jnt_dofadr[model.body(name).jntadr[0]]
    return float(np.linalg.norm(data.qvel[dof : dof + 3]))


def build_scene(spec: mujoco.MjSpec, name: str, rng: np.random.Generator) -> TaskScene:
    """Add the objects of task ``name`` to ``spec`` and return the scene with sampled poses."""
    builders = {"empty": lambda spec, rng: TaskScene("empty"), **{t: _BUILDERS[t] for t in TASKS}}
    if name not in builders:
        raise ValueError(f"unknown scene {name!r}; choose one of {sorted(builders)}")
    return builders[name](spec, rng)


# --- object helpers -------------------------------------------------------------------------


def _free_body(spec: mujoco.MjSpec, name: str) -> mujoco.MjsBody:
    body = spec.worldbody.add_body(name=name)
    body.add_freejoint(name=f"{name}_free")
    return body


def _geom(body, *, type, size, rgba, mass, pos=(0, 0, 0), quat=(1, 0, 0, 0), friction=(1.0, 0.005, 0.0001), condim=4,
          **extra):
    return body.add_geom(type=type, size=list(size) + [0] * (3 - len(size)), rgba=rgba, mass=mass, pos=list(pos),
                         quat=list(quat), friction=list(friction), contype=WORLD_BITS[0], conaffinity=WORLD_BITS[1],
                         condim=condim, **extra)


def _open_box(body, half_x, half_y, height, wall, rgba, mass):
    """Bottom plate and four walls: a tray or a cardboard box with its top open."""
    box = mujoco.mjtGeom.mjGEOM_BOX
    share = mass / 5
    _geom(body, type=box, size=(half_x, half_y, wall / 2), rgba=rgba, mass=share, pos=(0, 0, wall / 2))
    for sign in (-1, 1):
        _geom(body, type=box, size=(wall / 2, half_y, height / 2), rgba=rgba, mass=share,
              pos=(sign * (half_x - wall / 2), 0, height / 2))
        _geom(body, type=box, size=(half_x - wall, wall / 2, height / 2), rgba=rgba, mass=share,
              pos=(0, sign * (half_y - wall / 2), height / 2))


def _zone(spec, name, center, half, rgba):
    """A flat coloured patch on the table: seen by the camera, ignored by physics."""
    spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_BOX, size=[half[0], half[1], 0.0005],
                            pos=[center[0], center[1], 0.0005], rgba=rgba, contype=0, conaffinity=0)


def _sample(rng, x_range, y_range, yaw_range=(-np.pi, np.pi)) -> tuple[np.ndarray, float]:
    return np.array([rng.uniform(*x_range), rng.uniform(*y_range)]), float(rng.uniform(*yaw_range))


def _placed(model, data, name) -> bool:
    return object_speed(model, data, name) < AT_REST_SPEED


# --- the four tasks ---------------------------------------------------------------------------


def _dual_picking(spec, rng) -> TaskScene:
    """Apple (left arm) and banana (right arm) start on a plate; success: both picked up (the paper's "pick an
    apple and a banana from a plate to the table") and now on the table, off the plate."""
    plate_radius, plate_height = 0.11, 0.012
    plate = _free_body(spec, "plate")
    _geom(plate, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=(plate_radius, plate_height / 2),
          rgba=(0.95, 0.95, 0.93, 1), mass=0.4)
    apple = _free_body(spec, "apple")
    # Rolling friction (condim 6): an apple is not a billiard ball; with none (condim 4) a sphere nudged at
    # 1 m/s rolled on across the table and off it.
    _geom(apple, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=(0.035,), rgba=(0.80, 0.10, 0.08, 1), mass=0.15,
          friction=(1.0, 0.005, APPLE_ROLLING_FRICTION), condim=6)
    banana = _free_body(spec, "banana")
    lying_along_x = _axis_quat([0, 1, 0], np.pi / 2)
    for offset, bend in ((-0.045, -0.35), (0.0, 0.0), (0.045, 0.35)):  # three capsules curved in the table plane
        _geom(banana, type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=(0.016, 0.03), rgba=(0.95, 0.82, 0.15, 1),
              mass=0.04, pos=(offset, 0.008 * (offset != 0), 0),
              quat=_quat_multiply(_axis_quat([0, 0, 1], bend), lying_along_x))
    plate_xy, plate_yaw = _sample(rng, (0.36, 0.44), (-0.05, 0.05))
    apple_offset = np.array([rng.uniform(-0.02, 0.02), rng.uniform(0.03, 0.05)])
    banana_offset = np.array([rng.uniform(-0.02, 0.02), rng.uniform(-0.05, -0.03)])
    scene = TaskScene(
        "dual_picking",
        [
            ObjectPlacement("plate", plate_xy, plate_yaw, plate_height / 2,
                            (plate_radius, plate_radius, plate_height / 2)),
            ObjectPlacement("apple", plate_xy + apple_offset, float(rng.uniform(-np.pi, np.pi)), plate_height + 0.035,
                            (0.035, 0.035, 0.035)),
            ObjectPlacement("banana", plate_xy + banana_offset, float(rng.uniform(-0.5, 0.5)), plate_height + 0.016,
                            (0.077, 0.024, 0.016)),
        ],
        parameters={"plate_radius": plate_radius, "plate_height": plate_height},
        picked=("apple", "banana"),
    )
    scene.check = _dual_picking_success
    return scene


def _dual_picking_success(scene, model, data) -> bool:
    plate = object_position(data, "plate")
    resting = {p.name: p.half_extents[2] for p in scene.placements}  # centre height on the table
    for fruit in ("apple", "banana"):
        position, resting_height = object_position(data, fruit), resting[fruit]
        off_plate = np.linalg.norm(position[:2] - plate[:2]) > scene.parameters["plate_radius"] + 0.01
        on_table = position[2] < resting_height + 0.01  # lower than it would sit on the plate
        if not (scene.was_picked(fruit) and off_plate and on_table and _placed(model, data, fruit)):
            return False
    return True


def _block_pushing(spec, rng) -> TaskScene:
    """A large block starts in the left zone; success: it rests inside the right zone."""
    colours = {"left": (0.3, 0.5, 0.9, 1), "centre": (0.6, 0.6, 0.6, 1), "right": (0.3, 0.8, 0.4, 1)}
    for zone, y in ZONE_Y.items():
        _zone(spec, f"zone_{zone}", (ZONE_X, y), ZONE_HALF, colours[zone])
    half = 0.035
    block = _free_body(spec, "block")
    _geom(block, type=mujoco.mjtGeom.mjGEOM_BOX, size=(half, half, half), rgba=(0.85, 0.45, 0.15, 1), mass=0.4,
          friction=(0.5, 0.005, 0.0001))
    xy, yaw = _sample(rng, (ZONE_X - 0.03, ZONE_X + 0.03), (ZONE_Y["left"] - 0.03, ZONE_Y["left"] + 0.03), (-0.6, 0.6))
    scene = TaskScene("block_pushing", [ObjectPlacement("block", xy, yaw, half, (half, half, half))], parameters={"half": half})
    scene.check = _block_pushing_success
    return scene


def block_zone(data) -> str | None:
    """The zone ('left', 'centre', 'right') whose square contains the block centre, if any."""
    position = object_position(data, "block")
    for zone, y in ZONE_Y.items():
        if abs(position[0] - ZONE_X) <= ZONE_HALF[0] and abs(position[1] - y) <= ZONE_HALF[1]:
            return zone
    return None


def _block_pushing_success(scene, model, data) -> bool:
    on_table = object_position(data, "block")[2] < scene.parameters["half"] + 0.01
    return block_zone(data) == "right" and on_table and _placed(model, data, "block")


def _bimanual_lifting(spec, rng) -> TaskScene:
    """A soft watermelon plush (light ellipsoid, compliant contacts) to be lifted into a tray."""
    plush = _free_body(spec, "plush")
    # Rolling friction (condim 6): a stuffed toy flattens where it lies; a rigid, frictionless-rolling ellipsoid
    # set into the tray rocked 5 cm to and fro for seconds.
    _geom(plush, type=mujoco.mjtGeom.mjGEOM_ELLIPSOID, size=(0.08, 0.065, 0.055), rgba=(0.20, 0.55, 0.20, 1),
          mass=0.35, solref=[0.03, 0.5], solimp=[0.7, 0.95, 0.01, 0.5, 2], friction=(1.2, 0.01, PLUSH_ROLLING_FRICTION),
          condim=6)
    tray = _free_body(spec, "tray")
    # Both within the squeezing palms' reach (x 0.22-0.44 m at the lift's heights; the tray was at 0.52-0.56,
    # where the palms ended 5-10 cm short), the tray's near wall clear of the plush at every sampled pose.
    tray_half, tray_height = (0.10, 0.14), 0.04
    _open_box(tray, *tray_half, tray_height, 0.008, (0.25, 0.30, 0.45, 1), mass=0.8)
    plush_xy, plush_yaw = _sample(rng, (0.26, 0.29), (-0.04, 0.04), (-0.2, 0.2))
    tray_xy, tray_yaw = _sample(rng, (0.50, 0.52), (-0.06, 0.06), (-0.15, 0.15))
    scene = TaskScene(
        "bimanual_lifting",
        [ObjectPlacement("plush", plush_xy, plush_yaw, 0.055, (0.08, 0.065, 0.055)),
         ObjectPlacement("tray", tray_xy, tray_yaw, 0.0, (*tray_half, tray_height / 2))],
        parameters={"tray_half": tray_half, "tray_height": tray_height},
    )
    scene.check = _bimanual_lifting_success
    return scene


def _bimanual_lifting_success(scene, model, data) -> bool:
    plush_in_tray = _in_frame_of(data, "tray", object_position(data, "plush"))
    half_x, half_y = scene.parameters["tray_half"]
    inside = abs(plush_in_tray[0]) < half_x and abs(plush_in_tray[1]) < half_y
    resting_low = plush_in_tray[2] < scene.parameters["tray_height"] + 0.06
    return inside and resting_low and _placed(model, data, "plush")


def _lid_placement(spec, rng) -> TaskScene:
    """A cardboard box and its lid, which has a small knob on top to lift it by (a flat lid on a table
    cannot be picked up by a hand); success: the lid rests on the box, centred and aligned."""
    box_half, box_height = (0.08, 0.06), 0.10
    box = _free_body(spec, "box")
    _open_box(box, *box_half, box_height, 0.006, (0.66, 0.50, 0.32, 1), mass=0.3)
    lid = _free_body(spec, "lid")
    lid_thickness, knob_radius, knob_half_height = 0.008, 0.012, 0.018
    _geom(lid, type=mujoco.mjtGeom.mjGEOM_BOX, size=(box_half[0] + 0.01, box_half[1] + 0.01, lid_thickness / 2),
          rgba=(0.55, 0.40, 0.25, 1), mass=0.06)
    knob = (0.0, 0.0, lid_thickness / 2 + knob_half_height)
    _geom(lid, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=(knob_radius, knob_half_height), rgba=(0.45, 0.32, 0.2, 1),
          mass=0.01, pos=knob)
    box_xy, box_yaw = _sample(rng, (0.40, 0.46), (-0.16, -0.08), (-0.3, 0.3))
    lid_xy, lid_yaw = _sample(rng, (0.34, 0.42), (0.10, 0.18), (-0.5, 0.5))
    scene = TaskScene(
        "lid_placement",
        [ObjectPlacement("box", box_xy, box_yaw, 0.0, (*box_half, box_height / 2)),
         ObjectPlacement("lid", lid_xy, lid_yaw, lid_thickness / 2,
                         (box_half[0] + 0.01, box_half[1] + 0.01, lid_thickness / 2), grip_point=knob)],
        parameters={"box_height": box_height, "lid_thickness": lid_thickness},
    )
    scene.check = _lid_placement_success
    return scene


def _lid_placement_success(scene, model, data) -> bool:
    lid_in_box = _in_frame_of(data, "box", object_position(data, "lid"))
    centred = np.linalg.norm(lid_in_box[:2]) < 0.02
    on_top = abs(lid_in_box[2] - (scene.parameters["box_height"] + scene.parameters["lid_thickness"] / 2)) < 0.01
    lid_axes = data.body("lid").xmat.reshape(3, 3)
    box_axes = data.body("box").xmat.reshape(3, 3)
    flat = lid_axes[2, 2] > np.cos(np.radians(10))
    aligned = abs(np.dot(lid_axes[:2, 0], box_axes[:2, 0])) > np.cos(np.radians(15))  # either way round
    return centred and on_top and flat and aligned and _placed(model, data, "lid")


def _in_frame_of(data, body: str, point) -> np.ndarray:
    return data.body(body).xmat.reshape(3, 3).T @ (np.asarray(point) - data.body(body).xpos)


def _axis_quat(axis, angle) -> list[float]:
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return [float(np.cos(angle / 2)), *(np.sin(angle / 2) * axis)]


def _quat_multiply(a, b) -> list[float]:
    result = np.zeros(4)
    mujoco.mju_mulQuat(result, np.asarray(a, float), np.asarray(b, float))
    return result.tolist()


_BUILDERS = {
    "dual_picking": _dual_picking,
    "block_pushing": _block_pushing,
    "bimanual_lifting": _bimanual_lifting,
    "lid_placement": _lid_placement,
}
