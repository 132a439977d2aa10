"""VITRA-style human clips: 21-joint MediaPipe hand annotations + camera intrinsics + video.

On-disk layout (one annotation file per video)::

    <root>/<clip>.mp4
    <root>/<clip>.npz or <clip>.json with
        joints       (N, 2, 21, 3) metres, [left, right], MediaPipe joint order, one row per video frame
        intrinsics   (3, 3) pinhole K of the video
        valid        optional (N, 2) or (N, 2, 21); default: joints that are finite
        camera_pose  optional (4, 4) camera-to-world of the clip's first frame (OpenCV axes); when
                     given, joints are world-frame and are projected through this one pose, as the
                     paper does ("the camera pose of each clip's initial frame"); otherwise they are
                     already in the camera optical frame
        task         optional string (default: the file's parent directory name)

Paper: 25-frame clips at 16 FPS.
"""

import json
from pathlib import Path

import numpy as np

from ..skeleton import CameraIntrinsics
from .human_video import HandRecording, HumanVideoDataset


def _read_annotation(path: Path) -> dict:
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    return {k: (np.asarray(v) if isinstance(v, list) else v) for k, v in json.loads(path.read_text()).items()}


def load_vitra_hands(annotation: Path, video_size: tuple[int, int]) -> HandRecording:
    data = _read_annotation(annotation)
    joints = np.asarray(data["joints"], dtype=np.float64)
    if joints.ndim != 4 or joints.shape[1:] != (2, 21, 3):
        raise ValueError(f"{annotation}: joints must be (N, 2, 21, 3), got {joints.shape}")
    if "camera_pose" in data:
        world_to_camera = np.linalg.inv(np.asarray(data["camera_pose"], dtype=np.float64))
        joints = joints @ world_to_camera[:3, :3].T + world_to_camera[:3, 3]
    finite = np.isfinite(joints).all(-1)
    valid = np.asarray(data.get("valid", finite), dtype=bool)
    if valid.shape == joints.shape[:2]:
        valid = np.repeat(valid[..., None], 21, axis=-1)
    K = np.asarray(data["intrinsics"], dtype=np.float64)
    width, height = video_size
    intrinsics = CameraIntrinsics(fx=K[0, 0], fy=K[1, 1], cx=K[0, 2], cy=K[1, 2], width=width, height=height)
    return HandRecording(joints, valid & finite & (np.nan_to_num(joints[..., 2]) > 0), intrinsics)


def _video_size(video: Path) -> tuple[int, int]:
    import av

    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        return stream.codec_context.width, stream.codec_context.height


def _task(annotation: Path) -> str:
    data = _read_annotation(annotation)
    return str(data["task"]) if "task" in data else annotation.parent.name


class VitraDataset(HumanVideoDataset):
    def __init__(self, root, clip_frames: int = 25, height: int = 480, width: int = 832, fps: float = 16.0,
                 stride: int | None = None):
        root = Path(root)
        recordings = []
        for video in sorted(root.rglob("*.mp4")):
            annotation = next((video.with_suffix(s) for s in (".npz", ".json") if video.with_suffix(s).is_file()), None)
            if annotation is None:
                continue
            recordings.append((video, _task(annotation),
                               lambda a=annotation, v=video: load_vitra_hands(a, _video_size(v))))
        if not recordings:
            raise FileNotFoundError(f"no <clip>.mp4 with a <clip>.npz/.json annotation under {root}")
        super().__init__(recordings, clip_frames, height, width, fps, stride)
