"""Seeded visual and geometric variation of a task scene, so generated episodes do not all look alike.

Per episode: one size factor for the task objects (all lengths scale together, so the task stays
solvable and the success checks scale with it; masses scale with volume), object colours, a few
distractor objects on the table away from the task area, the table's texture, the lights, and a
small error in the head camera's pose. Object positions vary through each scene's own sampled
ranges (``scenes``). Everything comes from one ``numpy`` generator and is recorded by ``as_dict``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import mujoco
import numpy as np

from rynn_robot_bridge.sim.robot_model import HEAD_CAMERA, WORLD_BITS

SIZE_RANGE = (0.9, 1.1)
COLOUR_JITTER = 0.12  # per RGB channel, around each object's own colour
DISTRACTORS = (0, 3)  # how many, inclusive
# Table region for distractors: beyond the task area (x 0.2-0.66, |y| < 0.3), still in the camera's view.
DISTRACTOR_X = (0.70, 0.85)
DISTRACTOR_Y = (-0.35, 0.35)
CAMERA_SHIFT_M = 0.008  # per axis
CAMERA_TILT_RAD = np.radians(1.5)  # per axis
TABLE_TEXTURES = ("plain", "checker", "gradient")


@dataclass(frozen=True)
class Distractor:
    shape: str  # "box", "cylinder", "sphere"
    size: tuple  # half extents / radius (+ half height), m
    xy: tuple
    yaw: float
    rgba: tuple


@dataclass(frozen=True)
class SceneVariation:
    size_scale: float
    colours: dict  # task object -> rgba
    distractors: tuple
    table_texture: str
    table_rgb: tuple  # two colours (six values) of the table texture
    light_direction: tuple  # key light direction
    light_diffuse: float
    ambient: float
    camera_shift: tuple  # m, camera optical frame
    camera_tilt: tuple  # rad, small rotation about the optical frame's axes

    def as_dict(self) -> dict:
        """JSON-ready, for the episode metadata."""
        return _plain(asdict(self))


def sample_variation(rng: np.random.Generator, base_colours: dict) -> SceneVariation:
    """``base_colours``: task object -> its scene's rgba, varied around it (an apple stays reddish)."""
    colours = {name: tuple(float(c) for c in np.clip(np.asarray(rgba[:3]) + rng.uniform(-COLOUR_JITTER, COLOUR_JITTER, 3),
                                                       0.0, 1.0)) + (1.0,)
               for name, rgba in sorted(base_colours.items())}
    distractors = tuple(_sample_distractor(rng) for _ in range(int(rng.integers(DISTRACTORS[0], DISTRACTORS[1] + 1))))
    table = rng.uniform(0.45, 0.8, 3)
    direction = np.array([rng.uniform(-0.3, 0.4), rng.uniform(0.1, 0.6), -1.0])
    return SceneVariation(
        size_scale=float(rng.uniform(*SIZE_RANGE)),
        colours=colours,
        distractors=distractors,
        table_texture=str(rng.choice(TABLE_TEXTURES)),
        table_rgb=tuple(float(v) for v in np.concatenate([table, table * rng.uniform(0.8, 0.95)])),
        light_direction=tuple(float(v) for v in direction),
        light_diffuse=float(rng.uniform(0.45, 0.75)),
        ambient=float(rng.uniform(0.18, 0.32)),
        camera_shift=tuple(float(v) for v in rng.uniform(-CAMERA_SHIFT_M, CAMERA_SHIFT_M, 3)),
        camera_tilt=tuple(float(v) for v in rng.uniform(-CAMERA_TILT_RAD, CAMERA_TILT_RAD, 3)),
    )


def _sample_distractor(rng: np.random.Generator) -> Distractor:
    shape = str(rng.choice(("box", "cylinder", "sphere")))
    size = {"box": tuple(rng.uniform(0.012, 0.03, 3)), "cylinder": (rng.uniform(0.012, 0.025), rng.uniform(0.015, 0.04)),
            "sphere": (rng.uniform(0.012, 0.025),)}[shape]
    return Distractor(shape, tuple(float(s) for s in size),
                      (float(rng.uniform(*DISTRACTOR_X)), float(rng.uniform(*DISTRACTOR_Y))),
                      float(rng.uniform(-np.pi, np.pi)), tuple(float(c) for c in rng.uniform(0.1, 0.95, 3)) + (1.0,))


def object_colours(spec: mujoco.MjSpec, names: list[str]) -> dict:
    """Each task object's colour as built (its first geom's)."""
    return {name: tuple(spec.body(name).first_geom().rgba) for name in names}


def apply_variation(spec: mujoco.MjSpec, variation: SceneVariation, object_names: list[str]) -> None:
    """Edit ``spec`` before compilation: object sizes and colours, distractors, table, lights, camera."""
    scale = variation.size_scale
    for name in object_names:
        body = spec.body(name)
        for geom in _geoms(body):
            geom.size = np.asarray(geom.size) * scale
            geom.pos = np.asarray(geom.pos) * scale
            geom.mass = geom.mass * scale**3
            geom.rgba = _shade(geom.rgba, variation.colours[name], spec.body(name).first_geom().rgba)
    for index, distractor in enumerate(variation.distractors):
        _add_distractor(spec, f"distractor_{index}", distractor)
    _vary_table(spec, variation)
    light = spec.light("key")
    light.dir = list(variation.light_direction)
    light.diffuse = [variation.light_diffuse] * 3
    spec.visual.headlight.ambient = [variation.ambient] * 3
    camera = spec.camera(HEAD_CAMERA)
    tilt = np.zeros(4)
    mujoco.mju_axisAngle2Quat(tilt, np.asarray(variation.camera_tilt) / max(np.linalg.norm(variation.camera_tilt), 1e-12),
                              float(np.linalg.norm(variation.camera_tilt)))
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, tilt, np.asarray(camera.quat, dtype=float))  # tilt about the optical frame's axes
    camera.quat = quat
    camera.pos = np.asarray(camera.pos) + np.asarray(variation.camera_shift)


def _geoms(body) -> list:
    geoms, geom = [], body.first_geom()
    while geom is not None:
        geoms.append(geom)
        geom = body.next_geom(geom)
    return geoms


def _shade(rgba, target, base) -> list:
    """A geom's colour moved as its object's main colour moved (the banana's parts stay alike)."""
    return list(np.clip(np.asarray(rgba[:3]) + np.asarray(target[:3]) - np.asarray(base[:3]), 0.0, 1.0)) + [rgba[3]]


def _add_distractor(spec: mujoco.MjSpec, name: str, distractor: Distractor) -> None:
    """A small free object (contacts on) resting on the table."""
    shape = {"box": mujoco.mjtGeom.mjGEOM_BOX, "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
             "sphere": mujoco.mjtGeom.mjGEOM_SPHERE}[distractor.shape]
    height = distractor.size[-1] if distractor.shape != "sphere" else distractor.size[0]
    body = spec.worldbody.add_body(name=name, pos=[*distractor.xy, height],
                                   quat=[np.cos(distractor.yaw / 2), 0.0, 0.0, np.sin(distractor.yaw / 2)])
    body.add_freejoint(name=f"{name}_free")
    body.add_geom(type=shape, size=list(distractor.size) + [0.0] * (3 - len(distractor.size)), rgba=list(distractor.rgba),
                  mass=0.05, contype=WORLD_BITS[0], conaffinity=WORLD_BITS[1], condim=4)


def _vary_table(spec: mujoco.MjSpec, variation: SceneVariation) -> None:
    table = spec.geom("table")
    rgb1, rgb2 = list(variation.table_rgb[:3]), list(variation.table_rgb[3:])
    if variation.table_texture == "plain":
        table.rgba = rgb1 + [1.0]
        return
    builtin = {"checker": mujoco.mjtBuiltin.mjBUILTIN_CHECKER, "gradient": mujoco.mjtBuiltin.mjBUILTIN_GRADIENT}
    texture = spec.add_texture(name="table_texture", type=mujoco.mjtTexture.mjTEXTURE_2D,
                               builtin=builtin[variation.table_texture], rgb1=rgb1, rgb2=rgb2, width=128, height=128)
    material = spec.add_material(name="table_material")
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = texture.name
    material.texrepeat = [6, 6] if variation.table_texture == "checker" else [1, 1]
    table.material = material.name
    table.rgba = [1.0, 1.0, 1.0, 1.0]


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
