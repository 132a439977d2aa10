"""Pinocchio chains cut out of the bimanual URDF: one 7-DoF arm or one 20-DoF hand.

Each solver works on a reduced model (everything else locked at zero) because
the full 54-DoF model costs several times more per forward-kinematics call and
the arm and hand problems are independent. The chains' joint limits are the
URDF's as ``rynn_common.description.joint_limits`` reads them for every package.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from rynn_common.action_layout import arm_joint_names, hand_joint_names
from rynn_common.description.joint_limits import JointLimits, joint_limits_from_urdf
from rynn_common.description.kinematic_model import frame_id, load_model, placement_views

WORLD_ALIGNED = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def reduced_to(model: pin.Model, keep_joints: list[str]) -> pin.Model:
    """``model`` with every joint not in ``keep_joints`` locked at its neutral value."""
    missing = [name for name in keep_joints if not model.existJointName(name)]
    if missing:
        raise ValueError(f"the robot description lacks joints: {', '.join(missing)}")
    lock = [
        model.getJointId(model.names[i])
        for i in range(1, model.njoints)
        if model.names[i] not in keep_joints
    ]
    reduced = pin.buildReducedModel(model, lock, pin.neutral(model))
    order = [reduced.names[i] for i in range(1, reduced.njoints)]
    if order != keep_joints:
        raise ValueError(f"joint order in the URDF tree {order} differs from the action layout {keep_joints}")
    return reduced


@dataclass
class ArmChain:
    """One arm: base_link -> {side}_ee_link, plus the elbow frame for the shoulder prior."""

    side: str
    model: pin.Model
    data: pin.Data
    ee_frame: int
    elbow_frame: int
    palm_frame: int
    lower: np.ndarray
    upper: np.ndarray

    def palm_pose(self, q: np.ndarray) -> np.ndarray:
        """4x4 pose of {side}_palm_link (the hand-skeleton frame) in base_link."""
        pin.framesForwardKinematics(self.model, self.data, q)
        return self.data.oMf[self.palm_frame].homogeneous.copy()

    def ee_pose(self, q: np.ndarray) -> np.ndarray:
        """4x4 pose of the end effector in base_link."""
        pin.framesForwardKinematics(self.model, self.data, q)
        return self.data.oMf[self.ee_frame].homogeneous.copy()

    def elbow_position(self, q: np.ndarray) -> np.ndarray:
        pin.framesForwardKinematics(self.model, self.data, q)
        return self.data.oMf[self.elbow_frame].translation.copy()

    def ee_jacobian(self, q: np.ndarray) -> tuple[pin.SE3, np.ndarray]:
        """Pose and 6x7 Jacobian [linear; angular] of the EE, both in base_link axes."""
        jacobian = pin.computeFrameJacobian(self.model, self.data, q, self.ee_frame, WORLD_ALIGNED)
        pose = pin.updateFramePlacement(self.model, self.data, self.ee_frame)
        return pose, jacobian

    def elbow_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Elbow position and its 3x7 position Jacobian in base_link axes."""
        jacobian = pin.computeFrameJacobian(self.model, self.data, q, self.elbow_frame, WORLD_ALIGNED)
        pose = pin.updateFramePlacement(self.model, self.data, self.elbow_frame)
        return pose.translation.copy(), jacobian[:3]


def build_arm_chain(model: pin.Model, side: str, limits: JointLimits) -> ArmChain:
    """The ``side`` arm of ``model``, within ``limits`` (those of the URDF ``model`` was loaded from)."""
    names = arm_joint_names(side)
    arm = reduced_to(model, names)
    arm_limits = limits.select(names)
    return ArmChain(
        side=side,
        model=arm,
        data=arm.createData(),
        ee_frame=frame_id(arm, f"{side}_ee_link"),
        elbow_frame=frame_id(arm, f"{side}_arm_link4"),
        palm_frame=frame_id(arm, f"{side}_palm_link"),
        lower=arm_limits.lower,
        upper=arm_limits.upper,
    )


# Robot frames matched to MediaPipe keypoints, per finger (1 = thumb):
# joint-1 origin (MCP; thumb CMC), joint-3 origin (PIP; thumb MCP), joint-4 origin (DIP; thumb IP), tip.
FINGER_KEYPOINT_FRAMES = ("joint1", "joint3", "joint4", "tip_link")


@dataclass
class HandChain:
    """One hand: 20 finger joints, keypoint positions expressed in {side}_palm_link."""

    side: str
    model: pin.Model
    data: pin.Data
    palm_frame: int
    keypoint_frames: list[int]  # 20 frames in MediaPipe order 1..20 (wrist = palm origin)
    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self):
        self._support_mask = joint_support_mask(self.model, self.keypoint_frames)[:, None, :]
        # fetching the keypoints' placements one by one took 17 of the 41 us a call took
        _, self._keypoint_translations = placement_views(self.data, self.keypoint_frames)
        (self._palm_rotation,), (self._palm_translation,) = placement_views(self.data, [self.palm_frame])

    def keypoints(self, q: np.ndarray) -> np.ndarray:
        """(21, 3) MediaPipe-ordered keypoints in the palm frame, wrist at the origin."""
        pin.framesForwardKinematics(self.model, self.data, q)
        palm_inv = self.data.oMf[self.palm_frame].inverse()
        points = np.zeros((21, 3))
        for k, frame in enumerate(self.keypoint_frames, start=1):
            points[k] = palm_inv.act(self.data.oMf[frame].translation)
        return points

    def keypoints_and_jacobians(self, q: np.ndarray, indices) -> tuple[np.ndarray, np.ndarray]:
        """Keypoints (21, 3) and d keypoint / dq (21, 3, 20), palm frame; only ``indices`` are filled.

        All Jacobians come from Pinocchio's one joint Jacobian ``data.J`` (columns: velocity of the
        world origin; angular velocity) in a few array operations: a point p moves at
        v_origin + omega x p = v_origin - skew(p) omega, through the joints that carry it. A
        ``pin.getFrameJacobian`` call per keypoint gave the same numbers at about twice the time,
        most of it Python overhead, in the hand solve's inner loop.
        """
        pin.computeJointJacobians(self.model, self.data, q)
        pin.updateFramePlacements(self.model, self.data)
        rotation = self._palm_rotation
        rows = np.asarray(indices, dtype=int)
        translations = self._keypoint_translations
        world = np.array([translations[k - 1] for k in rows]).reshape(-1, 3)
        in_palm_axes = world @ rotation
        linear, angular = rotation.T @ self.data.J.reshape(2, 3, -1)
        points = np.zeros((21, 3))
        jacobians = np.zeros((21, 3, self.model.nv))
        points[rows] = in_palm_axes - self._palm_translation @ rotation
        jacobians[rows] = (linear - skew_matrices(in_palm_axes) @ angular) * self._support_mask[rows - 1]
        return points, jacobians


def joint_support_mask(model: pin.Model, frames: list[int]) -> np.ndarray:
    """(len(frames), nv): 1 for the velocities that move each frame, those of the joints from the root
    to the frame's parent joint (a fixed frame such as a tip link moves with its parent joint)."""
    mask = np.zeros((len(frames), model.nv))
    for row, frame in enumerate(frames):
        for joint in model.supports[model.frames[frame].parentJoint]:
            if joint > 0:  # 0 is the universe
                start = model.idx_vs[joint]
                mask[row, start:start + model.nvs[joint]] = 1.0
    return mask


# skew(v) = x skew(e_x) + y skew(e_y) + z skew(e_z): many cross-product matrices in one matrix product.
AXIS_SKEWS = np.array(
    [
        [[0, 0, 0], [0, 0, -1], [0, 1, 0]],
        [[0, 0, 1], [0, 0, 0], [-1, 0, 0]],
        [[0, -1, 0], [1, 0, 0], [0, 0, 0]],
    ],
    dtype=np.float64,
).reshape(3, 9)


def skew_matrices(vectors: np.ndarray) -> np.ndarray:
    """(n, 3, 3) cross-product matrices of (n, 3) vectors: skew(v) @ w == np.cross(v, w)."""
    return (vectors @ AXIS_SKEWS).reshape(-1, 3, 3)


def build_hand_chain(model: pin.Model, side: str, limits: JointLimits) -> HandChain:
    """The ``side`` hand of ``model``, within ``limits`` (those of the URDF ``model`` was loaded from). Works on
    the bimanual URDF and on the vendor's single-hand WUJI URDF alike."""
    names = hand_joint_names(side)
    hand_limits = limits.select(names)
    hand = reduced_to(model, names) if model.nq != len(names) else model
    if [hand.names[i] for i in range(1, hand.njoints)] != names:
        raise ValueError(f"hand joints in the URDF differ from the WUJI naming {names[:2]}...")
    frames = []
    for finger in range(1, 6):
        for kind in FINGER_KEYPOINT_FRAMES:
            name = f"{side}_finger{finger}_{kind}"
            if kind.startswith("joint"):
                frames.append(_joint_frame_id(hand, name))
            else:
                frames.append(frame_id(hand, name))
    return HandChain(
        side=side,
        model=hand,
        data=hand.createData(),
        palm_frame=frame_id(hand, f"{side}_palm_link"),
        keypoint_frames=frames,
        lower=hand_limits.lower,
        upper=hand_limits.upper,
    )


def hand_chain_from_urdf(urdf_path: str | Path, side: str) -> HandChain:
    """The ``side`` hand of the description at ``urdf_path``: the bimanual robot's or a single hand's."""
    return build_hand_chain(load_model(urdf_path), side, joint_limits_from_urdf(urdf_path, hand_joint_names(side)))


def _joint_frame_id(model: pin.Model, joint_name: str) -> int:
    """The frame Pinocchio creates for a joint (origin at the joint)."""
    return model.getFrameId(joint_name, pin.FrameType.JOINT)
