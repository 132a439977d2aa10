"""Generate ``rynn_bimanual.urdf``: the TIANJI M6 + two WUJI hands stand-in.

The URDF is generated rather than hand-written so that both arms stay mirror
images of each other, the hands stay identical to the vendor joint table, and
every inertial matches its primitive geometry. Run it after any change and
commit the output::

    python -m rynn_common.description.generate_urdf

Frames (REP-103): ``base_link`` x forward, y left, z up, on the table plane at
the robot's front edge. In the zero configuration the arms hang straight down;
each palm faces the body midline with the thumb forward, as a human's does.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rynn_common.description.camera import CAMERA_MOUNT_PITCH, CAMERA_MOUNT_XYZ
from rynn_common.description.wuji_hand_spec import HAND_JOINTS, LINK_MASS
from rynn_common.ros_names import BASE_FRAME, CAMERA_FRAME

OUTPUT = Path(__file__).with_name("rynn_bimanual.urdf")

TORSO_HEIGHT = 0.50
SHOULDER_Z = 0.45
SHOULDER_HALF_WIDTH = 0.22
UPPER_ARM = 0.30
FOREARM = 0.28
FOREARM_ROLL_OFFSET = 0.10  # joint 5 sits on the forearm axis, 10 cm below the elbow
FLANGE = 0.05  # wrist centre -> palm base
EE_IN_PALM = (0.02, 0.0, 0.07)  # palm centre, slightly on the palm side, between the knuckles


@dataclass(frozen=True)
class ArmJoint:
    name_suffix: str
    xyz: tuple
    axis: tuple
    lower: float
    upper: float
    effort: float
    velocity: float
    link_length: float  # length of the child link drawn along -z
    link_radius: float
    link_mass: float


def arm_joints(side: str) -> list[ArmJoint]:
    """Human-like 7-DoF SRS arm. Positive shoulder roll lifts the arm sideways outwards.

    Limits follow human range of motion, slightly reduced: shoulder flexion
    up to ~170 deg forward, elbow 0..145 deg, wrist +-60 deg.
    """
    sign = 1.0 if side == "left" else -1.0
    abd_lo, abd_hi = (-0.35, 2.6) if side == "left" else (-2.6, 0.35)
    y = sign * SHOULDER_HALF_WIDTH
    return [
        ArmJoint("arm_joint1", (0.0, y, SHOULDER_Z), (0, 1, 0), -3.0, 0.9, 60.0, 2.6, 0.0, 0.06, 1.2),
        ArmJoint("arm_joint2", (0.0, 0.0, 0.0), (1, 0, 0), abd_lo, abd_hi, 60.0, 2.6, 0.0, 0.055, 0.8),
        ArmJoint("arm_joint3", (0.0, 0.0, 0.0), (0, 0, sign), -1.6, 1.6, 30.0, 3.0, UPPER_ARM, 0.045, 1.6),
        ArmJoint("arm_joint4", (0.0, 0.0, -UPPER_ARM), (0, 1, 0), -2.5, 0.0, 30.0, 3.0, FOREARM_ROLL_OFFSET, 0.04, 0.6),
        ArmJoint("arm_joint5", (0.0, 0.0, -FOREARM_ROLL_OFFSET), (0, 0, sign), -2.0, 2.0, 10.0, 3.5,
                 FOREARM - FOREARM_ROLL_OFFSET, 0.035, 0.9),
        ArmJoint("arm_joint6", (0.0, 0.0, -(FOREARM - FOREARM_ROLL_OFFSET)), (0, 1, 0), -1.1, 1.1, 10.0, 3.5, 0.0, 0.03, 0.2),
        ArmJoint("arm_joint7", (0.0, 0.0, 0.0), (1, 0, 0), -0.7, 0.7, 10.0, 3.5, FLANGE, 0.03, 0.3),
    ]


def palm_mount_rpy(side: str) -> tuple:
    """Palm z along -base z (fingers continue the arm), palm normal x towards the midline."""
    medial = -1.0 if side == "left" else 1.0
    x_axis = np.array([0.0, medial, 0.0])
    z_axis = np.array([0.0, 0.0, -1.0])
    rotation = np.column_stack([x_axis, np.cross(z_axis, x_axis), z_axis])
    return rotation_to_rpy(rotation)


def rotation_to_rpy(rotation: np.ndarray) -> tuple:
    """URDF fixed-axis roll-pitch-yaw (R = Rz(y) Ry(p) Rx(r))."""
    pitch = math.asin(-max(-1.0, min(1.0, rotation[2, 0])))
    if abs(math.cos(pitch)) < 1e-9:
        return (0.0, pitch, math.atan2(-rotation[0, 1], rotation[1, 1]))
    return (
        math.atan2(rotation[2, 1], rotation[2, 2]),
        pitch,
        math.atan2(rotation[1, 0], rotation[0, 0]),
    )


def rotation_z_to(direction: np.ndarray) -> np.ndarray:
    """A rotation whose z axis points along ``direction`` (for cylinders)."""
    z = direction / np.linalg.norm(direction)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def fmt(values) -> str:
    return " ".join(f"{v:.9g}" for v in values)


class UrdfWriter:
    """Accumulates links/joints with primitive geometry and consistent inertials."""

    def __init__(self, name: str):
        self.robot = ET.Element("robot", name=name)
        mujoco = ET.SubElement(self.robot, "mujoco")
        # fusestatic=false keeps fingertip/ee/camera frames as bodies in MuJoCo.
        ET.SubElement(
            mujoco,
            "compiler",
            discardvisual="false",
            fusestatic="false",
            balanceinertia="true",
            autolimits="true",
        )

    def frame_link(self, name: str) -> None:
        """A massless frame (fingertip, ee, camera optical frame)."""
        ET.SubElement(self.robot, "link", name=name)

    def box_link(self, name: str, size, xyz, mass: float, rgba: str) -> None:
        link = ET.SubElement(self.robot, "link", name=name)
        sx, sy, sz = size
        inertia = (
            mass * (sy**2 + sz**2) / 12.0,
            mass * (sx**2 + sz**2) / 12.0,
            mass * (sx**2 + sy**2) / 12.0,
        )
        self._inertial(link, xyz, (0, 0, 0), mass, inertia)
        for tag in ("visual", "collision"):
            element = ET.SubElement(link, tag)
            ET.SubElement(element, "origin", xyz=fmt(xyz), rpy="0 0 0")
            geometry = ET.SubElement(element, "geometry")
            ET.SubElement(geometry, "box", size=fmt(size))
            if tag == "visual":
                self._material(element, rgba)

    def segment_link(self, name: str, start, end, radius: float, mass: float, rgba: str) -> None:
        """A cylinder from ``start`` to ``end`` (link frame) with its solid-cylinder inertia."""
        start, end = np.asarray(start, float), np.asarray(end, float)
        length = float(np.linalg.norm(end - start))
        link = ET.SubElement(self.robot, "link", name=name)
        if length < 1e-6:  # a joint housing: a sphere
            inertia = (0.4 * mass * radius**2,) * 3
            self._inertial(link, start, (0, 0, 0), mass, inertia)
            for tag in ("visual", "collision"):
                element = ET.SubElement(link, tag)
                ET.SubElement(element, "origin", xyz=fmt(start), rpy="0 0 0")
                ET.SubElement(ET.SubElement(element, "geometry"), "sphere", radius=f"{radius:.9g}")
                if tag == "visual":
                    self._material(element, rgba)
            return
        centre = (start + end) / 2.0
        rpy = rotation_to_rpy(rotation_z_to(end - start))
        transverse = mass * (3 * radius**2 + length**2) / 12.0
        self._inertial(link, centre, rpy, mass, (transverse, transverse, 0.5 * mass * radius**2))
        for tag in ("visual", "collision"):
            element = ET.SubElement(link, tag)
            ET.SubElement(element, "origin", xyz=fmt(centre), rpy=fmt(rpy))
            ET.SubElement(
                ET.SubElement(element, "geometry"), "cylinder", radius=f"{radius:.9g}", length=f"{length:.9g}"
            )
            if tag == "visual":
                self._material(element, rgba)

    def joint(self, name, kind, parent, child, xyz, rpy=(0, 0, 0), axis=None, limit=None) -> None:
        joint = ET.SubElement(self.robot, "joint", name=name, type=kind)
        ET.SubElement(joint, "origin", xyz=fmt(xyz), rpy=fmt(rpy))
        ET.SubElement(joint, "parent", link=parent)
        ET.SubElement(joint, "child", link=child)
        if axis is not None:
            ET.SubElement(joint, "axis", xyz=fmt(axis))
        if limit is not None:
            lower, upper, effort, velocity = limit
            ET.SubElement(
                joint, "limit", lower=f"{lower:.9g}", upper=f"{upper:.9g}", effort=f"{effort:.9g}", velocity=f"{velocity:.9g}"
            )

    def text(self) -> str:
        ET.indent(self.robot, space="  ")
        return '<?xml version="1.0"?>\n' + ET.tostring(self.robot, encoding="unicode") + "\n"

    @staticmethod
    def _inertial(link, xyz, rpy, mass, diagonal) -> None:
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "origin", xyz=fmt(xyz), rpy=fmt(rpy))
        ET.SubElement(inertial, "mass", value=f"{mass:.9g}")
        ixx, iyy, izz = (max(v, 1e-9) for v in diagonal)
        ET.SubElement(inertial, "inertia", ixx=f"{ixx:.9g}", ixy="0", ixz="0", iyy=f"{iyy:.9g}", iyz="0", izz=f"{izz:.9g}")

    @staticmethod
    def _material(visual, rgba: str) -> None:
        material = ET.SubElement(visual, "material", name=f"c{rgba.replace(' ', '_')}")
        ET.SubElement(material, "color", rgba=rgba)


ARM_RGBA = "0.75 0.75 0.78 1"
HAND_RGBA = "0.2 0.2 0.22 1"
BODY_RGBA = "0.35 0.37 0.42 1"


def add_arm(urdf: UrdfWriter, side: str) -> None:
    parent = "torso_link"
    for joint in arm_joints(side):
        child = f"{side}_{joint.name_suffix.replace('joint', 'link')}"
        urdf.segment_link(child, (0, 0, 0), (0, 0, -joint.link_length), joint.link_radius, joint.link_mass, ARM_RGBA)
        urdf.joint(
            f"{side}_{joint.name_suffix}", "revolute", parent, child, joint.xyz, axis=joint.axis,
            limit=(joint.lower, joint.upper, joint.effort, joint.velocity),
        )
        parent = child
    urdf.box_link(f"{side}_palm_link", (0.03, 0.085, 0.095), (0.0, 0.0, 0.045), LINK_MASS["palm_link"], HAND_RGBA)
    urdf.joint(f"{side}_wrist_flange_fixed", "fixed", parent, f"{side}_palm_link", (0, 0, -FLANGE), palm_mount_rpy(side))
    urdf.frame_link(f"{side}_ee_link")
    urdf.joint(f"{side}_ee_fixed", "fixed", f"{side}_palm_link", f"{side}_ee_link", EE_IN_PALM)
    add_hand(urdf, side)


def add_hand(urdf: UrdfWriter, side: str) -> None:
    """The WUJI joint tree; each finger link drawn as a cylinder to its child joint."""
    rows = HAND_JOINTS[side]
    child_offset = {row[1]: row[3] for row in rows if row[1] != "palm_link"}
    for name, parent, child, xyz, rpy, axis, limit in rows:
        if axis is None:
            urdf.frame_link(f"{side}_{child}")
            urdf.joint(f"{side}_{name}", "fixed", f"{side}_{parent}", f"{side}_{child}", xyz, rpy)
            continue
        end = child_offset.get(child, (0, 0, 0))
        urdf.segment_link(f"{side}_{child}", (0, 0, 0), end, 0.0085, LINK_MASS[child], HAND_RGBA)
        urdf.joint(f"{side}_{name}", "revolute", f"{side}_{parent}", f"{side}_{child}", xyz, rpy, axis, limit)


def add_camera(urdf: UrdfWriter) -> None:
    """Head-mounted D435i: ``camera_link`` (x forward) pitched down, optical frame z forward."""
    urdf.box_link("head_link", (0.12, 0.16, 0.14), (0.0, 0.0, 0.0), 1.0, BODY_RGBA)
    urdf.joint("head_fixed", "fixed", "torso_link", "head_link", (0.0, 0.0, TORSO_HEIGHT + 0.14))
    urdf.box_link("camera_link", (0.025, 0.09, 0.025), (0.0, 0.0, 0.0), 0.072, "0.1 0.1 0.1 1")
    head_to_camera = np.subtract(CAMERA_MOUNT_XYZ, (0.0, 0.0, TORSO_HEIGHT + 0.14))  # both in torso_link
    urdf.joint("camera_fixed", "fixed", "head_link", "camera_link", head_to_camera, (0.0, CAMERA_MOUNT_PITCH, 0.0))
    urdf.frame_link(CAMERA_FRAME)
    urdf.joint(
        "camera_color_optical_fixed", "fixed", "camera_link", CAMERA_FRAME,
        (0.0, 0.0, 0.0), (-math.pi / 2, 0.0, -math.pi / 2),
    )


def build() -> str:
    urdf = UrdfWriter("rynn_bimanual")
    urdf.frame_link(BASE_FRAME)
    urdf.box_link("torso_link", (0.16, 0.30, TORSO_HEIGHT), (-0.04, 0.0, TORSO_HEIGHT / 2), 12.0, BODY_RGBA)
    urdf.joint("torso_fixed", "fixed", BASE_FRAME, "torso_link", (-0.10, 0.0, 0.0))
    for side in ("left", "right"):
        add_arm(urdf, side)
    add_camera(urdf)
    return urdf.text()


def main() -> None:
    OUTPUT.write_text(build())
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
