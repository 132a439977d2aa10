"""Depth-aware skeleton renderer: depth modulation, hands, null control, bad joints."""

import numpy as np
import pytest

from rynn_world.skeleton import CameraIntrinsics, SkeletonRenderer, SkeletonStyle

K = CameraIntrinsics(fx=300.0, fy=300.0, cx=104.0, cy=64.0, width=208, height=128)


def _hands(seed=0, frames=3):
    rng = np.random.default_rng(seed)
    hands = rng.normal(0.0, 0.03, (frames, 2, 21, 3))
    hands[:, 0, :, 0] -= 0.08
    hands[:, 1, :, 0] += 0.08
    hands[..., 2] += 0.5
    return hands


def _single_joint(z, hand=0):
    """One visible wrist on the optical axis at depth z; every other joint hidden."""
    hands = np.full((1, 2, 21, 3), np.nan)
    hands[0, hand, 0] = (0.0, 0.0, z)
    return hands


def test_nearer_joint_is_larger_and_takes_the_near_colour():
    k480 = K.scaled(832, 480)
    renderer = SkeletonRenderer(k480, SkeletonStyle(near_m=0.2, far_m=1.0))
    near, far = renderer.render(_single_joint(0.25))[0], renderer.render(_single_joint(0.95))[0]
    near_area, far_area = (near.sum(-1) > 0).sum(), (far.sum(-1) > 0).sum()
    assert near_area > 3 * far_area > 0
    centre = (int(k480.cy), int(k480.cx))
    np.testing.assert_array_equal(near[centre], renderer.colour_at(np.array(0), np.array(0.25)))
    np.testing.assert_array_equal(far[centre], renderer.colour_at(np.array(0), np.array(0.95)))
    # the ramp is monotone: the near colour is brighter than the far colour
    assert int(near[centre].sum()) > int(far[centre].sum())


def test_radius_follows_configured_ramp_and_clips_outside_range():
    renderer = SkeletonRenderer(K, SkeletonStyle(near_m=0.2, far_m=1.0, joint_radius_px=(8.0, 2.0)))
    scale = K.height / 480.0
    radii = renderer.size_at((8.0, 2.0), np.array([0.1, 0.2, 0.6, 1.0, 3.0]))
    np.testing.assert_array_equal(radii, np.maximum(np.rint(np.array([8, 8, 5, 2, 2]) * scale), 1))


def test_left_and_right_use_different_hue_families():
    renderer = SkeletonRenderer(K)
    left = renderer.render(_single_joint(0.4, hand=0))[0][int(K.cy), int(K.cx)].astype(int)
    right = renderer.render(_single_joint(0.4, hand=1))[0][int(K.cy), int(K.cx)].astype(int)
    assert left[0] > left[2] and right[2] > right[0]


def test_missing_and_nan_joints_draw_nothing():
    renderer = SkeletonRenderer(K)
    assert not renderer.render(np.full((2, 2, 21, 3), np.nan)).any()
    hidden = renderer.render(_hands(), valid=np.zeros((3, 2), dtype=bool))
    assert not hidden.any()
    behind_camera = _hands()
    behind_camera[..., 2] = -0.5
    assert not renderer.render(behind_camera).any()


def test_nan_joint_equals_masked_joint():
    renderer = SkeletonRenderer(K)
    hands = _hands()
    valid = np.ones((3, 2, 21), dtype=bool)
    valid[1, 0, 8] = False
    with_nan = hands.copy()
    with_nan[1, 0, 8] = np.nan
    np.testing.assert_array_equal(renderer.render(with_nan), renderer.render(hands, valid=valid))


def test_sequence_equals_per_frame_and_is_deterministic():
    renderer = SkeletonRenderer(K)
    hands = _hands(frames=4)
    forearms = np.stack([hands[:, :, 0] + np.array([0.0, 0.15, 0.1]), hands[:, :, 0]], axis=2)
    batch = renderer.render(hands, forearms)
    assert batch.shape == (4, K.height, K.width, 3) and batch.dtype == np.uint8
    assert batch.any()
    for t in range(4):
        np.testing.assert_array_equal(batch[t], renderer.render(hands[t], forearms[t]))
    np.testing.assert_array_equal(batch, renderer.render(hands, forearms))
    buffer = np.full((4, K.height, K.width, 3), 7, dtype=np.uint8)
    np.testing.assert_array_equal(renderer.render(hands, forearms, out=buffer), batch)


def test_forearm_drawn_and_nearer_occludes_farther():
    renderer = SkeletonRenderer(K)
    hands = np.full((1, 2, 21, 3), np.nan)
    forearms = np.full((1, 2, 2, 3), np.nan)
    forearms[0, 0] = [(-0.1, 0.0, 0.3), (0.1, 0.0, 0.3)]  # left forearm, near
    forearms[0, 1] = [(0.0, -0.1, 0.9), (0.0, 0.1, 0.9)]  # right forearm, far, crossing it
    image = renderer.render(hands, forearms)[0]
    crossing = image[int(K.cy), int(K.cx)].astype(int)
    assert crossing[0] > crossing[2], "the nearer (left, warm) forearm must be painted on top"


def test_bad_shapes_raise():
    renderer = SkeletonRenderer(K)
    with pytest.raises(ValueError, match="hands must be"):
        renderer.render(np.zeros((3, 21, 3)))
    with pytest.raises(ValueError, match="valid must be"):
        renderer.render(_hands(), valid=np.ones((3, 3), dtype=bool))
    with pytest.raises(ValueError, match="near_m"):
        SkeletonStyle(near_m=1.0, far_m=0.5)
    with pytest.raises(ValueError, match="out must be"):
        renderer.render(_hands(), out=np.zeros((1, 8, 8, 3), np.uint8))
