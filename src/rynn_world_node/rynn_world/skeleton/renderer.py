"""Depth-aware skeleton rendering: camera-frame hand joints -> RGB skeleton video.

Nearer joints and bones are drawn larger and brighter so the 2D video keeps the depth cue that a
plain projection loses (paper Sec. 3.2). The left hand uses a warm hue family and the right hand a
cool one. A black frame means "no action" (the null control), so nothing is drawn for hidden,
missing or non-finite joints. Primitives are painted far-to-near so nearer parts occlude farther
ones. Projection and styling are vectorised over the whole sequence; only the raster calls loop.
"""

from dataclasses import dataclass

import cv2
import numpy as np

from rynn_common.description.camera import CameraIntrinsics

from .topology import FOREARM_ELBOW, FOREARM_WRIST, HAND_BONES, NUM_HAND_JOINTS

_MIN_DEPTH_M = 1e-3  # points at or behind the camera plane cannot be projected
_COORD_LIMIT = 1 << 15  # keep cv2's integer coordinates far from overflow


@dataclass(frozen=True)
class SkeletonStyle:
    """Depth ramp and sizes. Sizes are in pixels at a 480-pixel-high image and scale with height."""

    near_m: float = 0.2
    far_m: float = 1.0
    joint_radius_px: tuple[float, float] = (8.0, 2.0)  # (at near, at far)
    bone_thickness_px: tuple[float, float] = (6.0, 1.0)
    forearm_thickness_px: tuple[float, float] = (14.0, 3.0)
    # RGB colour at (near, far) per hand; warm for left, cool for right.
    left_rgb: tuple[tuple[int, int, int], tuple[int, int, int]] = ((255, 230, 0), (150, 0, 30))
    right_rgb: tuple[tuple[int, int, int], tuple[int, int, int]] = ((0, 235, 255), (40, 0, 150))
    bone_brightness: float = 0.75  # bones slightly darker than joints so joints stay visible
    antialias: bool = False

    def __post_init__(self):
        if not self.far_m > self.near_m > 0:
            raise ValueError(f"need 0 < near_m < far_m, got near_m={self.near_m} far_m={self.far_m}")


class SkeletonRenderer:
    """Renders (T, 2, 21, 3) camera-frame hand joints (+ optional forearms) to (T, H, W, 3) uint8 RGB."""

    def __init__(self, intrinsics: CameraIntrinsics, style: SkeletonStyle = SkeletonStyle()):
        self.intrinsics = intrinsics
        self.style = style
        self._size_scale = intrinsics.height / 480.0
        self._line_type = cv2.LINE_AA if style.antialias else cv2.LINE_8
        near_far = np.array([style.left_rgb, style.right_rgb], dtype=np.float64)  # (hand, near/far, 3)
        self._rgb_near, self._rgb_far = near_far[:, 0], near_far[:, 1]

    def depth_fraction(self, z: np.ndarray) -> np.ndarray:
        """0 at the near plane, 1 at the far plane, clipped."""
        s = self.style
        return np.clip((z - s.near_m) / (s.far_m - s.near_m), 0.0, 1.0)

    def size_at(self, sizes: tuple[float, float], z: np.ndarray) -> np.ndarray:
        """Pixel size interpolated over the depth ramp (nearer = larger), at least 1 px."""
        d = self.depth_fraction(z)
        px = (sizes[0] + (sizes[1] - sizes[0]) * d) * self._size_scale
        return np.maximum(np.rint(px), 1).astype(np.int64)

    def colour_at(self, hand: np.ndarray, z: np.ndarray, brightness: float = 1.0) -> np.ndarray:
        """RGB colour per point from its hand's ramp; `hand` broadcasts against `z`."""
        d = self.depth_fraction(z)[..., None]
        rgb = self._rgb_near[hand] + (self._rgb_far[hand] - self._rgb_near[hand]) * d
        return np.rint(rgb * brightness).astype(np.int64)

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pinhole projection -> (integer pixel coordinates, projectable mask)."""
        k = self.intrinsics
        z = points[..., 2]
        ok = np.isfinite(points).all(axis=-1) & (z > _MIN_DEPTH_M)
        safe_z = np.where(ok, z, 1.0)
        u = k.fx * np.where(ok, points[..., 0], 0.0) / safe_z + k.cx
        v = k.fy * np.where(ok, points[..., 1], 0.0) / safe_z + k.cy
        uv = np.clip(np.rint(np.stack([u, v], axis=-1)), -_COORD_LIMIT, _COORD_LIMIT).astype(np.int64)
        return uv, ok

    def render(self, hands, forearms=None, valid=None, out: np.ndarray | None = None) -> np.ndarray:
        """Render a sequence (or one frame when `hands` is (2, 21, 3)).

        hands: (T, 2, 21, 3) metres in the camera optical frame, hand 0 = left, 1 = right.
        forearms: optional (T, 2, 2, 3) elbow and wrist points per hand.
        valid: optional (T, 2) per-hand or (T, 2, 21) per-joint visibility; False hides the joint.
        out: optional uint8 buffer of the output shape, cleared and reused (a streaming caller keeps
            one so each frame does not pay for fresh pages).
        """
        hands = np.asarray(hands, dtype=np.float64)
        single = hands.ndim == 3
        if single:
            hands = hands[None]
            forearms = None if forearms is None else np.asarray(forearms)[None]
            valid = None if valid is None else np.asarray(valid)[None]
        if hands.ndim != 4 or hands.shape[1:] != (2, NUM_HAND_JOINTS, 3):
            raise ValueError(f"hands must be (T, 2, {NUM_HAND_JOINTS}, 3) or (2, {NUM_HAND_JOINTS}, 3), got {hands.shape}")
        num_frames = hands.shape[0]
        hand_ok = self._validity(valid, num_frames)

        uv, ok = self.project(hands)
        ok &= hand_ok
        z = np.where(ok, hands[..., 2], self.style.far_m)  # hidden joints keep a finite placeholder
        hand_index = np.arange(2)[None, :, None]
        prims = [self._joint_prims(uv, z, ok, hand_index), self._bone_prims(uv, z, ok, hand_index)]
        if forearms is not None:
            prims.append(self._forearm_prims(forearms, num_frames, hand_ok))

        frames = self._output_buffer(out, num_frames)
        for t in range(num_frames):
            self._draw_frame(frames[t], [p[t] for p in prims])
        return frames[0] if single else frames

    def _output_buffer(self, out, num_frames: int) -> np.ndarray:
        k = self.intrinsics
        shape = (num_frames, k.height, k.width, 3)
        if out is None:
            return np.zeros(shape, dtype=np.uint8)
        view = out.reshape((-1,) + out.shape[-3:]) if out.ndim in (3, 4) else out
        if view.shape != shape or view.dtype != np.uint8:
            raise ValueError(f"out must be uint8 with shape {shape}, got {out.dtype} {out.shape}")
        view.fill(0)
        return view

    def _validity(self, valid, num_frames: int) -> np.ndarray:
        if valid is None:
            return np.ones((num_frames, 2, NUM_HAND_JOINTS), dtype=bool)
        valid = np.asarray(valid, dtype=bool)
        if valid.shape == (num_frames, 2):
            return np.repeat(valid[..., None], NUM_HAND_JOINTS, axis=-1)
        if valid.shape == (num_frames, 2, NUM_HAND_JOINTS):
            return valid
        raise ValueError(f"valid must be ({num_frames}, 2) or ({num_frames}, 2, {NUM_HAND_JOINTS}), got {valid.shape}")

    def _joint_prims(self, uv, z, ok, hand_index):
        """Per frame: (depth, kind=0, x0, y0, x1, y1, size, r, g, b) rows."""
        size = self.size_at(self.style.joint_radius_px, z)
        rgb = self.colour_at(np.broadcast_to(hand_index, z.shape), z)
        return _pack(z, 0, uv, uv, size, rgb, ok)

    def _bone_prims(self, uv, z, ok, hand_index):
        a, b = HAND_BONES[:, 0], HAND_BONES[:, 1]
        zb = 0.5 * (z[..., a] + z[..., b])
        okb = ok[..., a] & ok[..., b]
        size = self.size_at(self.style.bone_thickness_px, zb)
        rgb = self.colour_at(np.broadcast_to(hand_index, zb.shape), zb, self.style.bone_brightness)
        return _pack(zb, 1, uv[..., a, :], uv[..., b, :], size, rgb, okb)

    def _forearm_prims(self, forearms, num_frames, hand_ok):
        forearms = np.asarray(forearms, dtype=np.float64)
        if forearms.shape != (num_frames, 2, 2, 3):
            raise ValueError(f"forearms must be ({num_frames}, 2, 2, 3), got {forearms.shape}")
        uv, ok = self.project(forearms)
        okf = ok[..., FOREARM_ELBOW] & ok[..., FOREARM_WRIST] & hand_ok[..., 0]
        zf = 0.5 * (forearms[..., FOREARM_ELBOW, 2] + forearms[..., FOREARM_WRIST, 2])
        zf = np.where(okf, zf, self.style.far_m)
        size = self.size_at(self.style.forearm_thickness_px, zf)
        rgb = self.colour_at(np.broadcast_to(np.arange(2)[None], zf.shape), zf, self.style.bone_brightness)
        return _pack(zf, 1, uv[..., FOREARM_ELBOW, :], uv[..., FOREARM_WRIST, :], size, rgb, okf)

    def _draw_frame(self, image: np.ndarray, prims: list[np.ndarray]) -> None:
        rows = np.concatenate([p.reshape(-1, p.shape[-1]) for p in prims])
        rows = rows[rows[:, 1] >= 0]  # hidden primitives are marked with kind -1
        rows = rows[np.argsort(-rows[:, 0], kind="stable")]  # far first: painter's order
        line_type = self._line_type
        for _, kind, x0, y0, x1, y1, size, r, g, b in rows[:, :10].tolist():
            colour = (int(r), int(g), int(b))
            if kind == 0:
                cv2.circle(image, (int(x0), int(y0)), int(size), colour, -1, line_type)
            else:
                cv2.line(image, (int(x0), int(y0)), (int(x1), int(y1)), colour, int(size), line_type)


def _pack(depth, kind, uv0, uv1, size, rgb, ok) -> np.ndarray:
    """Stack primitive fields into float rows; hidden ones get kind -1 and are dropped when drawing."""
    kinds = np.where(ok, kind, -1)
    depth = np.where(ok, depth, 0.0)
    fields = [depth, kinds, uv0[..., 0], uv0[..., 1], uv1[..., 0], uv1[..., 1], size, rgb[..., 0], rgb[..., 1], rgb[..., 2]]
    return np.stack([np.asarray(f, dtype=np.float64) for f in fields], axis=-1).reshape(depth.shape[0], -1, len(fields))
