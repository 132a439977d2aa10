"""The clip every reader produces, and the frame-index helpers they share."""

from dataclasses import dataclass

import cv2
import numpy as np

from ..image_input import to_model_rgb
from ..skeleton import CameraIntrinsics, SkeletonRenderer, render_control


@dataclass
class Clip:
    """One training/evaluation sample, all arrays frame-aligned at the model frame rate.

    reference: (H, W, 3) uint8, the frame the clip starts from (equal to frames[0]).
    frames: (T, H, W, 3) uint8 ground-truth RGB.
    skeleton: (T, H, W, 3) uint8 depth-aware skeleton render in the same camera.
    actions: (T, 54) robot action (absolute rad) or None for human video.
    task: task / activity name; source_id: where it came from (episode or file + start frame).
    object_mask: (T, H, W) uint8, the simulator's segmentation of the task objects (0: none, i + 1:
        object i) or None; object_position: (T, N, 3) their positions (m); simulated episodes only.
    """

    reference: np.ndarray
    frames: np.ndarray
    skeleton: np.ndarray
    actions: np.ndarray | None
    task: str
    source_id: str
    object_mask: np.ndarray | None = None
    object_position: np.ndarray | None = None


def check_clip_frames(clip_frames: int, temporal_compression: int = 4) -> int:
    """Clips must be 1 + 4k frames (81, 25, 17, 9 ...) so the causal VAE maps them to 1 + k latents."""
    if clip_frames < 1 or (clip_frames - 1) % temporal_compression:
        raise ValueError(f"clip length must be 1 + {temporal_compression}k frames (e.g. 81, 25, 17, 9), got {clip_frames}")
    return clip_frames


def clip_starts(num_frames: int, clip_frames: int, stride: int) -> list[int]:
    """First frame of every full clip of `clip_frames` frames, `stride` apart."""
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    return list(range(0, num_frames - clip_frames + 1, stride))


def resample_indices(source_times_s: np.ndarray, fps: float) -> np.ndarray:
    """Index of the newest source frame at or before each tick of an `fps` clock (same rule as serving)."""
    times = np.asarray(source_times_s, dtype=np.float64) - float(source_times_s[0])
    ticks = np.arange(0.0, times[-1] + 1e-9, 1.0 / fps)
    return np.clip(np.searchsorted(times, ticks + 1e-9, side="right") - 1, 0, len(times) - 1)


def resize_frames(frames: np.ndarray, height: int, width: int) -> np.ndarray:
    return np.stack([to_model_rgb(f, height, width, "video frame") for f in frames])


def resize_masks(masks: np.ndarray, height: int, width: int) -> np.ndarray:
    """(T, h, w) label masks at (height, width), nearest label (labels are not blended)."""
    if masks.shape[1:] == (height, width):
        return masks
    return np.stack([cv2.resize(m, (width, height), interpolation=cv2.INTER_NEAREST) for m in masks])


def render_skeleton(joints_camera: np.ndarray, valid: np.ndarray | None, intrinsics: CameraIntrinsics,
                    height: int, width: int, elbows: np.ndarray | None = None) -> np.ndarray:
    """(T, 2, 21, 3) camera-frame joints (NaN = missing) and (T, 2, 3) elbows -> (T, H, W, 3) control
    frames, through the same ``render_control`` the live node uses."""
    return render_control(SkeletonRenderer(intrinsics.scaled(width, height)), joints_camera, valid, elbows)


class ClipMix:
    """Several clip datasets read as one, in order. Its `items` are ((dataset, episode), start), so
    clips of different datasets never count as the same episode (the action-grounding pairing)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("a clip mix needs at least one dataset")
        self.items = [((d, episode), start) for d, dataset in enumerate(self.datasets)
                      for episode, start in dataset.items]
        self._owner = [(d, i) for d, dataset in enumerate(self.datasets) for i in range(len(dataset))]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Clip:
        d, i = self._owner[index]
        return self.datasets[d][i]
