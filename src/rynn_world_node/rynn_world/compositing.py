"""Reference compositing: with a camera that does not move, pixels the robot cannot have changed come
from the reference frame, not from the model.

The robot's head camera is fixed, so everything the hands have not reached since the reference still
looks exactly as it did then. Copying the reference reproduces those pixels bit for bit; the world
model, decoding through a small VAE, blurs the table's texture and lets it drift. The compositor keeps
the model's pixels only near the control skeleton (the hands and forearm bars the model was conditioned
on, in every frame since the reference: where they are now and what they passed over, uncovered,
pushed or carried) and the reference's pixels elsewhere, with a feathered seam. The mask comes from the
control frames, so it follows the action, and a null action (no skeleton yet: the robot holds)
returns the reference unchanged.

Limit: the robot's arm as the reference shows it is only replaced where a skeleton comes. When the
operator's hands are far from the robot's pose at the switch (a digital session started from an image
file), the arm stays in place, also through re-anchors on generated frames, until a hand passes there.
(A term keeping the model's pixels where it changed the scene far beyond its blur cost 0.6 dB on
out-of-distribution scenes and was dropped: docs/world_model.md, "Reference compositing".)

One instance per stream: ``reset`` on each (re-)anchor, ``apply`` on each generated block with the
control frames it was conditioned on. The live stream and the evaluation's teacher both go through it.
"""

import cv2
import numpy as np

_ANY_CHANNEL = np.ones((1, 3), dtype=np.float32)  # cv2.transform: per-pixel channel sum (saturating)


class ReferenceCompositor:
    def __init__(self, radius_px: int, feather_px: float):
        """radius_px: how far from a skeleton pixel the model's frame is kept (the robot's arm is wider than
        the skeleton's bars); feather_px: half the width of the linear seam centred on that distance."""
        if radius_px < 0 or feather_px < 0 or feather_px > radius_px:
            raise ValueError(f"need 0 <= feather_px <= radius_px, got radius_px {radius_px}, feather_px {feather_px}")
        self.radius_px = int(radius_px)
        self.feather_px = float(feather_px)
        self._reference: np.ndarray | None = None
        self._unswept: np.ndarray | None = None

    def reset(self, reference: np.ndarray) -> None:
        """Start a chunk on this (H, W, 3) uint8 reference; the swept region starts empty."""
        self._reference = np.ascontiguousarray(reference, dtype=np.uint8)
        self._unswept = np.full(reference.shape[:2], 255, dtype=np.uint8)  # 0 where a skeleton has been

    def mask(self, control: np.ndarray) -> np.ndarray:
        """Add one (H, W, 3) control frame to the swept region; the model's weight per pixel, (H, W) float32
        in [0, 1]: 1 up to radius - feather from the swept skeleton, 0 beyond radius + feather, linear between."""
        self._check_started()
        self._unswept[cv2.transform(np.ascontiguousarray(control), _ANY_CHANNEL) > 0] = 0
        distance = cv2.distanceTransform(self._unswept, cv2.DIST_L2, cv2.DIST_MASK_5)
        if self.feather_px == 0:
            return (distance <= self.radius_px).astype(np.float32)
        return np.clip((self.radius_px + self.feather_px - distance) / (2.0 * self.feather_px), 0.0, 1.0)

    def apply(self, frames: np.ndarray, control: np.ndarray) -> np.ndarray:
        """(n, H, W, 3) uint8 generated frames and the n control frames they were conditioned on ->
        the composited frames (n, H, W, 3) uint8."""
        self._check_started()
        if frames.shape != control.shape or frames.shape[1:] != self._reference.shape:
            raise ValueError(f"frames {frames.shape}, control {control.shape} and reference {self._reference.shape} differ")
        out = np.empty_like(frames)
        for i, (frame, control_frame) in enumerate(zip(frames, control)):
            weight = self.mask(control_frame)
            out[i] = cv2.blendLinear(np.ascontiguousarray(frame), self._reference, weight, 1.0 - weight)
        return out

    def _check_started(self) -> None:
        if self._reference is None:
            raise RuntimeError("ReferenceCompositor.reset(reference) must come first")


def compositor_for(config, static_camera: bool) -> ReferenceCompositor | None:
    """A WorldModelConfig's compositor for a fixed camera; None for a moving one or a config without a radius."""
    if not static_camera or config.composite_radius_px is None:
        return None
    return ReferenceCompositor(config.composite_radius_px, config.composite_feather_px)
