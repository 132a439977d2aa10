"""EgoDex (Apple, egocentric dexterous manipulation): ARKit hand poses + video, for stage 1.

On-disk layout (the dataset's own)::

    <root>/<task>/<n>.hdf5   camera/intrinsic (3, 3); transforms/camera (N, 4, 4) camera-to-world;
                             transforms/<joint> (N, 4, 4) joint-to-world for the ARKit joints
                             named below; optional confidences/<joint> (N,)
    <root>/<task>/<n>.mp4    the egocentric video, N frames (30 FPS in the release)

ARKit cameras look along -z with y up; the points are turned into the optical frame
(x right, y down, z forward) the renderer expects. The 21 MediaPipe joints per hand are
<side>Hand (wrist) and the Knuckle / IntermediateBase / IntermediateTip / Tip of each finger
(Thumb, IndexFinger, MiddleFinger, RingFinger, LittleFinger); the forearm is drawn from
<side>Forearm (the elbow) to the wrist when present. Paper: 81-frame clips at 16 FPS.
"""

from pathlib import Path

import h5py
import numpy as np

from ..skeleton import CameraIntrinsics
from .human_video import HandRecording, HumanVideoDataset

FINGERS = ("Thumb", "IndexFinger", "MiddleFinger", "RingFinger", "LittleFinger")
SEGMENTS = ("Knuckle", "IntermediateBase", "IntermediateTip", "Tip")
SIDES = ("left", "right")
ARKIT_TO_OPTICAL = np.diag([1.0, -1.0, -1.0])


def mediapipe_joint_names(side: str) -> list[str]:
    return [f"{side}Hand"] + [f"{side}{finger}{segment}" for finger in FINGERS for segment in SEGMENTS]


def load_egodex_hands(hdf5_path: Path, confidence_threshold: float = 0.0) -> HandRecording:
    with h5py.File(hdf5_path, "r") as f:
        K = np.asarray(f["camera/intrinsic"], dtype=np.float64)
        camera_to_world = np.asarray(f["transforms/camera"], dtype=np.float64)
        world_to_camera = np.linalg.inv(camera_to_world)

        def camera_points(name: str) -> np.ndarray:
            position = np.asarray(f[f"transforms/{name}"], dtype=np.float64)[:, :3, 3]
            local = np.einsum("nij,nj->ni", world_to_camera[:, :3, :3], position) + world_to_camera[:, :3, 3]
            return local @ ARKIT_TO_OPTICAL.T

        def confidence(name: str) -> np.ndarray:
            key = f"confidences/{name}"
            return np.asarray(f[key]) > confidence_threshold if key in f else np.ones(len(camera_to_world), bool)

        joints = np.stack([np.stack([camera_points(n) for n in mediapipe_joint_names(s)], 1) for s in SIDES], 1)
        valid = np.stack([np.stack([confidence(n) for n in mediapipe_joint_names(s)], 1) for s in SIDES], 1)
        elbows = None  # the forearm bar runs from <side>Forearm to <side>Hand, joint 0 (the wrist)
        if all(f"transforms/{s}Forearm" in f for s in SIDES):
            elbows = np.stack([camera_points(f"{s}Forearm") for s in SIDES], 1)
    # the video's pixel size is the intrinsics' frame: principal point at the centre
    width, height = int(round(2 * K[0, 2])), int(round(2 * K[1, 2]))
    intrinsics = CameraIntrinsics(fx=K[0, 0], fy=K[1, 1], cx=K[0, 2], cy=K[1, 2], width=width, height=height)
    return HandRecording(joints, valid & (joints[..., 2] > 0), intrinsics, elbows)


class EgoDexDataset(HumanVideoDataset):
    """All <task>/<n>.hdf5 + .mp4 pairs under root (tasks: optional subset), as clips."""

    def __init__(self, root, clip_frames: int = 81, height: int = 480, width: int = 832, fps: float = 16.0,
                 stride: int | None = None, tasks: list[str] | None = None):
        root = Path(root)
        pairs = sorted(p for p in root.glob("*/*.hdf5") if p.with_suffix(".mp4").is_file()
                       and (tasks is None or p.parent.name in tasks))
        if not pairs:
            raise FileNotFoundError(f"no <task>/<n>.hdf5 + <n>.mp4 pairs under {root}")
        recordings = [(p.with_suffix(".mp4"), p.parent.name, lambda p=p: load_egodex_hands(p)) for p in pairs]
        super().__init__(recordings, clip_frames, height, width, fps, stride)
