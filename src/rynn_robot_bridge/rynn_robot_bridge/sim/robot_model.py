"""Build the MuJoCo model of the robot from the project URDF (one source of truth with Pinocchio).

The URDF gives links and joints, and the joint limits through the one reader
(``rynn_common.description.joint_limits``); this module adds what a simulator
needs on top: position servos for the 54 action joints, gravity compensation
(the real arm controller does it too), the head camera with the D435i
intrinsics, and collision groups so the robot touches the world but not itself.
"""

from __future__ import annotations

import math
from pathlib import Path

import mujoco

from rynn_common.action_layout import ARM_DOF, joint_names
from rynn_common.description import D435I_COLOR, CameraIntrinsics, resolve_urdf_path
from rynn_common.description.joint_limits import joint_limits_from_urdf
from rynn_common.ros_names import CAMERA_FRAME

HEAD_CAMERA = "head_camera"
HIDDEN_GROUP = 3  # collision geoms and the camera's own housing: simulated, not drawn
CAMERA_HOUSING = ("head_link", "camera_link", CAMERA_FRAME)  # would sit in front of the lens
# contype/conaffinity bits: robot geoms collide with the world, not with each other.
ROBOT_BITS = (2, 1)
WORLD_BITS = (1, 3)
PIXEL_PITCH_M = 3e-6  # nominal sensor pixel size; only the ratio focal/pitch matters

# Servo stiffness [N m/rad] by joint group; damping follows from dampratio at compile time.
SHOULDER_ELBOW_KP = 800.0
WRIST_KP = 150.0
FINGER_KP = 6.0
DAMPING_RATIO = 1.0
ARM_ARMATURE = 0.05
FINGER_ARMATURE = 0.002
FINGER_FRICTION = (1.5, 0.02, 0.001)
# Joint end stops: MuJoCo's default limit (time constant 20 ms, soft) let a finger in contact overshoot its
# URDF range by 0.11 rad, which the bridge's state check rightly rejects (real hands have hard stops).
# Two control periods is the stiffest time constant the 500 Hz integrator resolves.
LIMIT_TIME_CONSTANT_PERIODS = 2.0


def camera_quat_in_optical_frame() -> list[float]:
    """MuJoCo cameras look along -z with y up; the optical frame looks along +z with y down:
    a half turn about x maps one onto the other."""
    return [0.0, 1.0, 0.0, 0.0]


def build_robot_spec(
    urdf_path: str | Path | None = None,
    camera: CameraIntrinsics = D435I_COLOR,
    control_rate_hz: float = 500.0,
) -> mujoco.MjSpec:
    """The robot on its table, ready for task objects to be added before ``compile()``."""
    urdf_path = resolve_urdf_path(str(urdf_path) if urdf_path else None)
    spec = mujoco.MjSpec.from_file(str(urdf_path))
    spec.modelname = "rynn_sim"
    spec.option.timestep = 1.0 / control_rate_hz
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10.0  # stiffer friction: grasped objects slip less
    spec.visual.global_.offwidth = max(camera.width, 640)
    spec.visual.global_.offheight = max(camera.height, 480)

    for body in spec.bodies:
        if body.name != "world":
            body.gravcomp = 1.0
    for geom in spec.geoms:
        if geom.parent.name in CAMERA_HOUSING:
            geom.group = HIDDEN_GROUP
        if geom.contype or geom.conaffinity:  # a collision geom from the URDF
            geom.group = HIDDEN_GROUP
            geom.contype, geom.conaffinity = ROBOT_BITS
            if "finger" in geom.parent.name or "palm" in geom.parent.name:
                geom.friction = FINGER_FRICTION
                geom.condim = 4

    limits = joint_limits_from_urdf(urdf_path)
    for index, name in enumerate(joint_names()):
        joint = spec.joint(name)
        joint.range = [limits.lower[index], limits.upper[index]]
        is_arm = index < 2 * ARM_DOF
        joint.armature = ARM_ARMATURE if is_arm else FINGER_ARMATURE
        joint.solref_limit = [LIMIT_TIME_CONSTANT_PERIODS * spec.option.timestep, 1.0]
        if is_arm:
            kp = SHOULDER_ELBOW_KP if index % ARM_DOF < 4 else WRIST_KP
        else:
            kp = FINGER_KP
        actuator = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        actuator.set_to_position(kp=kp, dampratio=DAMPING_RATIO)
        actuator.ctrllimited = False
        actuator.forcelimited = True
        actuator.forcerange = [-limits.effort[index], limits.effort[index]]

    _add_head_camera(spec, camera)
    _add_workspace(spec)
    return spec


def _add_head_camera(spec: mujoco.MjSpec, camera: CameraIntrinsics) -> None:
    body = spec.body(CAMERA_FRAME)
    if body is None:
        raise ValueError(f"the robot description has no {CAMERA_FRAME} link for the head camera")
    cam = body.add_camera(name=HEAD_CAMERA, quat=camera_quat_in_optical_frame())
    cam.resolution = [camera.width, camera.height]
    cam.sensor_size = [camera.width * PIXEL_PITCH_M, camera.height * PIXEL_PITCH_M]
    cam.focal_pixel = [camera.fx, camera.fy]
    cam.principal_pixel = [camera.cx - camera.width / 2.0, camera.cy - camera.height / 2.0]
    cam.fovy = math.degrees(2.0 * math.atan(camera.height / (2.0 * camera.fy)))


def _add_workspace(spec: mujoco.MjSpec) -> None:
    """Floor, a table whose top is base_link's z=0 plane in front of the robot, and lights."""
    spec.visual.headlight.ambient = [0.25, 0.25, 0.25]
    spec.visual.headlight.diffuse = [0.35, 0.35, 0.35]
    world = spec.worldbody
    grid = spec.add_texture(name="floor_grid", type=mujoco.mjtTexture.mjTEXTURE_2D,
                            builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
                            rgb1=[0.30, 0.32, 0.35], rgb2=[0.26, 0.28, 0.31], width=256, height=256)
    floor_material = spec.add_material(name="floor")
    floor_material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = grid.name
    floor_material.texrepeat = [8, 8]
    world.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[3, 3, 0.1], pos=[0, 0, -0.75],
                   material="floor", contype=WORLD_BITS[0], conaffinity=WORLD_BITS[1])
    world.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.6, 0.8, 0.02], pos=[0.63, 0, -0.02],
                   rgba=[0.72, 0.62, 0.50, 1], friction=[0.8, 0.005, 0.0001],
                   contype=WORLD_BITS[0], conaffinity=WORLD_BITS[1])
    world.add_geom(name="back_wall", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.02, 2.0, 1.0], pos=[2.2, 0, 0.2],
                   rgba=[0.85, 0.86, 0.88, 1], contype=0, conaffinity=0)
    # No shadows: on the CPU rasteriser they cost ~3/4 of every frame (bench_sim_robot.py).
    world.add_light(name="key", pos=[0.3, -0.6, 1.6], dir=[0.1, 0.4, -1], diffuse=[0.6, 0.6, 0.6], castshadow=False)
    world.add_light(name="fill", pos=[0.5, 0.8, 1.2], dir=[0, -0.5, -1], diffuse=[0.3, 0.3, 0.3], castshadow=False)
