"""The robot's link transforms as robot_state_publisher computes them, with Pinocchio (no ROS).

Every URDF joint becomes one parent-link -> child-link transform: fixed joints
(torso, head, camera mount, camera optical frame, palms, fingertips) once, for
/tf_static; moving joints from joint positions, for /tf. The model is the one
``rynn_common.description.kinematic_model`` loads for the retargeting too, from the
same URDF, so the camera pose here is the one the skeleton projection assumes.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from rynn_common.description.kinematic_model import load_model, placement_views


@dataclass(frozen=True)
class RobotStatePublisherSettings:
    """The node's parameters, named as robot_state_publisher's."""

    urdf_path: str = ""  # empty: the packaged rynn_bimanual.urdf
    publish_frequency: float = 20.0  # /tf at most this often (robot_state_publisher's default)
    frame_prefix: str = ""


@dataclass(frozen=True)
class LinkTransform:
    """Pose of ``child`` in ``parent`` (4x4), named after the URDF joint that links them."""

    joint: str
    parent: str
    child: str
    matrix: np.ndarray


@dataclass(frozen=True)
class _Edge:
    joint: str
    parent_frame: int
    child_frame: int


class RobotStatePublisherCore:
    """``static_transforms()`` once; ``update(names, positions)`` per JointState -> the moving transforms."""

    def __init__(self, urdf_path: str | Path):
        self.urdf_path = Path(urdf_path)
        self.description = self.urdf_path.read_text()
        self.model = load_model(self.urdf_path)
        self.data = self.model.createData()
        self.q = pin.neutral(self.model)
        self.drops: Counter = Counter()  # reason -> count of rejected or ignored inputs
        self._fixed: list[_Edge] = []
        self._moving: dict[str, _Edge] = {}
        frames = self.model.frames
        for child, frame in enumerate(frames):
            joint_frame = frames[frame.parentFrame]
            if frame.type != pin.FrameType.BODY or frame.parentFrame == 0:
                continue  # only links, and not the root link (attached to Pinocchio's "universe")
            edge = _Edge(joint_frame.name, joint_frame.parentFrame, child)
            if joint_frame.type == pin.FrameType.JOINT:
                self._moving[joint_frame.name] = edge
            else:
                self._fixed.append(edge)
        self._q_index = {}
        for name in self._moving:
            joint = self.model.joints[self.model.getJointId(name)]
            if joint.nq not in (1, 2):
                raise ValueError(f"joint {name} has {joint.nq} position variables; only 1-DoF joints are supported")
            self._q_index[name] = (joint.idx_q, joint.nq)
        # The moving transforms are computed together from views of the placements (54 SE3 objects and Frame
        # copies a message took ~240 us); the link names are looked up once.
        edges = list(self._moving.values())
        self._moving_row = {name: row for row, name in enumerate(self._moving)}
        self._moving_links = [(frames[e.parent_frame].name, frames[e.child_frame].name) for e in edges]
        self._parent_rotations, self._parent_translations = placement_views(self.data, [e.parent_frame for e in edges])
        self._child_rotations, self._child_translations = placement_views(self.data, [e.child_frame for e in edges])

    @property
    def root_link(self) -> str:
        return self.model.frames[1].name

    @property
    def moving_joints(self) -> list[str]:
        return list(self._moving)

    def static_transforms(self) -> list[LinkTransform]:
        """Fixed joints: independent of the joint positions (computed at the neutral configuration)."""
        pin.framesForwardKinematics(self.model, self.data, pin.neutral(self.model))
        return [self._transform(edge) for edge in self._fixed]

    def update(self, names, positions) -> list[LinkTransform]:
        """Transforms of the moving joints named in a JointState. A NaN/inf position or a names/positions
        length mismatch rejects the message (counted); names the robot does not have are ignored (counted)."""
        if len(names) != len(positions):
            self.drops["names/positions length mismatch"] += 1
            return []
        values = np.asarray(positions, dtype=np.float64)
        if not np.isfinite(values).all():
            self.drops["NaN/inf position"] += 1
            return []
        known = []
        for name, value in zip(names, values):
            index = self._q_index.get(name)
            if index is None:
                self.drops["unknown joint"] += 1
                continue
            start, size = index
            self.q[start:start + size] = value if size == 1 else (math.cos(value), math.sin(value))
            known.append(name)
        if not known:
            return []
        pin.framesForwardKinematics(self.model, self.data, self.q)
        matrices = self._moving_matrices()
        transforms = []
        for name in known:
            row = self._moving_row[name]
            transforms.append(LinkTransform(name, *self._moving_links[row], matrices[row]))
        return transforms

    def _moving_matrices(self) -> np.ndarray:
        """(moving joints, 4, 4): each child link's pose in its parent link at the last forward kinematics."""
        parent_rotations = np.array(self._parent_rotations)
        offsets = np.array(self._child_translations) - np.array(self._parent_translations)
        matrices = np.zeros((len(parent_rotations), 4, 4))
        matrices[:, 3, 3] = 1.0
        matrices[:, :3, :3] = parent_rotations.transpose(0, 2, 1) @ np.array(self._child_rotations)
        matrices[:, :3, 3] = (offsets[:, None, :] @ parent_rotations)[:, 0]  # R_parent^T (t_child - t_parent)
        return matrices

    def link_pose(self, link: str) -> np.ndarray:
        """4x4 pose of ``link`` in the root link at the last ``update`` (Pinocchio FK)."""
        pin.framesForwardKinematics(self.model, self.data, self.q)
        return self.data.oMf[self.model.getFrameId(link, pin.FrameType.BODY)].homogeneous.copy()

    def _transform(self, edge: _Edge) -> LinkTransform:
        parent = self.data.oMf[edge.parent_frame]
        child = self.data.oMf[edge.child_frame]
        frames = self.model.frames
        return LinkTransform(edge.joint, frames[edge.parent_frame].name, frames[edge.child_frame].name,
                             (parent.actInv(child)).homogeneous)
