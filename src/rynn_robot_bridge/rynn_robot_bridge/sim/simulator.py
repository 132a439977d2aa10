"""The simulated robot: MuJoCo physics with the 54 joint servos, joint state and the head camera.

Stepping is explicit (``step``) so the real-time LCM loop, the episode
generator (as fast as possible) and the tests drive the same object.
"""

from __future__ import annotations

import collections

import mujoco
import numpy as np

from rynn_common.action_layout import ACTION_DIM, ARM_DOF, joint_names
from rynn_common.description import D435I_COLOR, CameraIntrinsics, resolve_urdf_path
from rynn_common.description.joint_limits import joint_limits_from_urdf
from rynn_robot_bridge.sim.headless_gl import RendererUnavailable, require_renderer
from rynn_robot_bridge.sim.robot_model import HEAD_CAMERA, build_robot_spec
from rynn_robot_bridge.sim.scene_variation import SceneVariation, apply_variation, object_colours, sample_variation
from rynn_robot_bridge.sim.scenes import build_scene

# Arms: upper arm slightly forward, forearm level above the table's front edge, hands open
# (clipped into the joint limits at load, since some finger joints cannot reach zero).
HOME_POSE = np.zeros(ACTION_DIM)
HOME_POSE[[0, ARM_DOF]] = -0.3
HOME_POSE[[3, ARM_DOF + 3]] = -1.3
OFF_TABLE_M = 0.05  # an object's origin this far below the table top (base_link z = 0) is off the table
FLUNG_M = 2.0  # an object's origin this far from base_link was flung away (a contact that blew up)


class SimulatedRobot:
    """One robot on its table with one task scene; targets are 54-D absolute joint positions."""

    def __init__(
        self,
        scene: str = "empty",
        seed: int = 0,
        urdf_path: str | None = None,
        camera: CameraIntrinsics = D435I_COLOR,
        control_rate_hz: float = 500.0,
        command_delay_s: float = 0.0,
        vary_scene: bool = False,
    ):
        urdf = resolve_urdf_path(urdf_path or None)
        spec = build_robot_spec(urdf, camera, control_rate_hz)
        self.task = build_scene(spec, scene, np.random.default_rng(seed))
        self.variation: SceneVariation | None = None
        if vary_scene:  # its own stream: object poses stay those of the same seed without variation
            names = self.task.object_names()
            self.variation = sample_variation(np.random.default_rng([seed, 2]), object_colours(spec, names))
            apply_variation(spec, self.variation, names)
            self.task.scale(self.variation.size_scale)
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        self.task.watch(self.model)
        self.camera = camera
        self.limits = joint_limits_from_urdf(urdf)
        names = joint_names()
        joint_ids = [self.model.joint(n).id for n in names]
        self._qpos = self.model.jnt_qposadr[joint_ids]
        self._dof = self.model.jnt_dofadr[joint_ids]
        self._actuators = np.array([self.model.actuator(n).id for n in names])
        gains = self.model.actuator_gainprm[self._actuators, 0]
        self._feedforward_scale = -self.model.actuator_biasprm[self._actuators, 2] / gains  # kv / kp
        self._max_step = self.limits.velocity * self.model.opt.timestep
        self._delay_steps = int(round(command_delay_s / self.model.opt.timestep))
        self.home_pose = np.clip(HOME_POSE, self.limits.lower, self.limits.upper)
        self._pending: collections.deque = collections.deque()
        self._camera_view: HeadCameraView | None = None
        labels = np.zeros(self.model.nbody, dtype=np.uint8)
        for i, name in enumerate(self.task.object_names()):
            labels[self.model.body(name).id] = i + 1
        # object_mask's label per geom id seen; the extra last entry is index -1 (nothing seen) -> 0
        self._geom_labels = np.append(labels[self.model.geom_bodyid], np.uint8(0))
        self.reset()

    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def timestep(self) -> float:
        return float(self.model.opt.timestep)

    def reset(self, joint_positions: np.ndarray | None = None) -> None:
        """Robot at rest at ``joint_positions`` (default: home), objects at their seeded initial poses."""
        if joint_positions is not None:
            self.home_pose = np.clip(np.asarray(joint_positions, dtype=np.float64), self.limits.lower, self.limits.upper)
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[self._qpos] = self.home_pose
        self.task.place_objects(self.model, self.data)
        mujoco.mj_forward(self.model, self.data)
        self._servo_target = self.home_pose.copy()
        self._requested = self.home_pose.copy()
        self._feedforward = np.zeros(ACTION_DIM)
        self._pending.clear()
        self._write_controls()

    def set_joint_targets(self, position: np.ndarray, velocity_feedforward: np.ndarray | None = None) -> None:
        """Targets the servos move to, at most at the URDF joint velocity limits (after the command delay)."""
        request = (np.asarray(position, dtype=np.float64).copy(),
                   np.zeros(ACTION_DIM) if velocity_feedforward is None else np.asarray(velocity_feedforward, float))
        if self._delay_steps:
            self._pending.append((self.data.time + self._delay_steps * self.timestep - 1e-9, request))
        else:
            self._requested, self._feedforward = request

    def step(self, steps: int = 1) -> None:
        for _ in range(steps):
            while self._pending and self._pending[0][0] <= self.data.time:
                self._requested, self._feedforward = self._pending.popleft()[1]
            self._servo_target += np.clip(self._requested - self._servo_target, -self._max_step, self._max_step)
            self._write_controls()
            mujoco.mj_step(self.model, self.data)
            self.task.observe(self.data, self.model.opt.timestep)

    def joint_positions(self) -> np.ndarray:
        return self.data.qpos[self._qpos].copy()

    def joint_velocities(self) -> np.ndarray:
        return self.data.qvel[self._dof].copy()

    def joint_efforts(self) -> np.ndarray:
        return self.data.actuator_force[self._actuators].copy()

    def physics_warnings(self) -> dict[str, int]:
        """MuJoCo's warnings so far that occurred (name -> count); e.g. ``mjWARN_BADQVEL``: the physics
        diverged and MuJoCo reset the state, so what follows is not the episode's physics."""
        return {mujoco.mjtWarning(i).name: int(self.data.warning[i].number)
                for i in range(int(mujoco.mjtWarning.mjNWARNING)) if self.data.warning[i].number}

    def objects_off_table(self) -> list[str]:
        """Task objects now below the table top (fallen off it) or flung far away (a contact that blew up)."""
        positions = {name: self.data.body(name).xpos for name in self.task.object_names()}
        return [name for name, xyz in positions.items() if xyz[2] < -OFF_TABLE_M or np.linalg.norm(xyz) > FLUNG_M]

    def render(self) -> np.ndarray:
        """(H, W, 3) uint8 RGB from the head camera; ``RendererUnavailable`` if no GL backend works."""
        return self._view().render(self.data)

    def object_mask(self) -> np.ndarray:
        """(H, W) uint8 from the head camera: 0 where no task object is seen, ``i + 1`` where
        ``task.object_names()[i]`` is (MuJoCo's segmentation render; the evaluation's interaction regions)."""
        return self._geom_labels[self._view().segment(self.data)]

    def _view(self) -> HeadCameraView:
        if self._camera_view is None:  # created on first use: physics-only users never need a GL context
            self._camera_view = HeadCameraView(self.model, self.camera)
        return self._camera_view

    def close(self) -> None:
        if self._camera_view is not None:
            self._camera_view.close()
            self._camera_view = None

    def _write_controls(self) -> None:
        self.data.ctrl[self._actuators] = self._servo_target + self._feedforward_scale * self._feedforward


class HeadCameraView:
    """Offscreen renderer of the head camera. Its GL context belongs to the thread that created it.

    ``multisamples`` (anti-aliasing samples a pixel) replaces the model's own setting (MuJoCo's default, 4)
    before the context is made; physics never reads it, so a model stepping in another thread is unaffected.
    """

    def __init__(self, model: mujoco.MjModel, camera: CameraIntrinsics, multisamples: int | None = None):
        require_renderer()
        if multisamples is not None:
            if multisamples < 0:
                raise ValueError(f"multisamples must be >= 0, got {multisamples}")
            model.vis.quality.offsamples = multisamples
        try:
            self._renderer = mujoco.Renderer(model, camera.height, camera.width)
        except Exception as exc:  # the GL stack fails in many ways; all mean "no camera"
            raise RendererUnavailable(f"MuJoCo renderer could not start: {exc}") from exc

    def render(self, data: mujoco.MjData) -> np.ndarray:
        self._renderer.update_scene(data, camera=HEAD_CAMERA)
        return self._renderer.render()

    def segment(self, data: mujoco.MjData) -> np.ndarray:
        """(H, W) geom id seen at each pixel, -1 for none (other object types, e.g. skybox, also -1)."""
        self._renderer.update_scene(data, camera=HEAD_CAMERA)
        self._renderer.enable_segmentation_rendering()
        try:
            ids, types = np.moveaxis(self._renderer.render(), -1, 0)
        finally:
            self._renderer.disable_segmentation_rendering()
        return np.where(types == mujoco.mjtObj.mjOBJ_GEOM, ids, -1)

    def close(self) -> None:
        self._renderer.close()
