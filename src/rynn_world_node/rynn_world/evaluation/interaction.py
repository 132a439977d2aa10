"""Interaction: how well a method renders the objects the robot moves.

A whole-frame score is dominated by the static table; the moved object covers a few hundred pixels.
So, in clips where a task object moves (its simulated position changes by more than ``MOVED_M``),
the score is PSNR over the moved objects' region only: every pixel the simulator's segmentation
render shows one of them at in any frame of the clip (where it was and where it went), the same
region in every generated frame. Copy-the-reference keeps the object where it was, so a model that
learned the interaction beats it there.
"""

import numpy as np

from ..data.clips import Clip
from .metrics import psnr

MOVED_M = 0.02  # an object that moves more than this within a clip was moved (resting contacts jitter by < 1 mm)


def moved_objects(clip: Clip, threshold_m: float = MOVED_M) -> list[int]:
    """Mask labels (1-based) of the task objects whose position leaves frame 0's by more than ``threshold_m``."""
    if clip.object_position is None:
        return []
    travel = np.linalg.norm(clip.object_position - clip.object_position[:1], axis=-1).max(axis=0)
    return [int(i) + 1 for i in np.flatnonzero(travel > threshold_m)]


def interaction_region(clip: Clip, threshold_m: float = MOVED_M) -> np.ndarray | None:
    """(H, W) bool: where any moved object is seen in any frame of the clip; None when nothing moved
    (or the clip has no segmentation) or the moved objects are never in view."""
    labels = moved_objects(clip, threshold_m)
    if not labels or clip.object_mask is None:
        return None
    region = np.isin(clip.object_mask, labels).any(axis=0)
    return region if region.any() else None


def region_psnr(video: np.ndarray, truth: np.ndarray, region: np.ndarray) -> float:
    """PSNR (dB, 8-bit) over the pixels of ``region`` (H, W) in every frame of (T, H, W, 3) videos."""
    if video.shape != truth.shape or region.shape != truth.shape[1:3]:
        raise ValueError(f"shapes differ: video {video.shape}, truth {truth.shape}, region {region.shape}")
    # the region's pixels as a (T, N, 1, 3) clip, scored by the evaluation's own PSNR
    return psnr(video[:, region][:, :, None], truth[:, region][:, :, None])
