"""Depth-aware hand skeleton rendering (the world model's action representation, paper Sec. 3.2)."""

from .renderer import CameraIntrinsics, SkeletonRenderer, SkeletonStyle
from .topology import HAND_BONES, NUM_HAND_JOINTS

__all__ = ["CameraIntrinsics", "SkeletonRenderer", "SkeletonStyle", "HAND_BONES", "NUM_HAND_JOINTS"]
