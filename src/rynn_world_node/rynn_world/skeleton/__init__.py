"""Depth-aware hand skeleton rendering (the world model's action representation, paper Sec. 3.2)."""

from .control import ControlSample, render_control, render_samples
from .renderer import CameraIntrinsics, SkeletonRenderer, SkeletonStyle
from .topology import HAND_BONES, NUM_HAND_JOINTS

__all__ = ["ControlSample", "render_control", "render_samples", "CameraIntrinsics", "SkeletonRenderer", "SkeletonStyle",
           "HAND_BONES", "NUM_HAND_JOINTS"]
