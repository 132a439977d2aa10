"""Reference compositing: the model's pixels near the control skeleton (now or earlier in the chunk),
the reference's elsewhere; the streaming model and the evaluation's teacher path composite alike."""

from dataclasses import replace

import cv2
import numpy as np
import pytest
import torch

from rynn_world.compositing import ReferenceCompositor
from rynn_world.evaluation.generation import composite_clip
from rynn_world.model.configs import get_config
from rynn_world.streaming import StreamingWorldModel

H, W = 48, 80
RADIUS, FEATHER = 4, 1.0
FAR = RADIUS + FEATHER  # beyond this distance from any skeleton pixel the reference's pixels are kept


def _images(n=3):
    rng = np.random.default_rng(0)
    reference = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    generated = rng.integers(0, 256, (n, H, W, 3), dtype=np.uint8)
    return reference, generated


def _control(n, *points):
    """n black control frames; frame i gets a small bright disc at points[i] (x, y) when given."""
    control = np.zeros((n, H, W, 3), dtype=np.uint8)
    for i, point in enumerate(points):
        if point is not None:
            cv2.circle(control[i], point, 1, (200, 40, 10), -1)
    return control


def test_a_null_action_returns_the_reference_bit_for_bit():
    reference, generated = _images()
    compositor = ReferenceCompositor(RADIUS, FEATHER)
    compositor.reset(reference)
    out = compositor.apply(generated, _control(3))
    np.testing.assert_array_equal(out, np.repeat(reference[None], 3, axis=0))


def test_pixels_near_the_skeleton_are_the_models_and_far_ones_the_references():
    reference, generated = _images(1)
    compositor = ReferenceCompositor(RADIUS, FEATHER)
    compositor.reset(reference)
    out = compositor.apply(generated, _control(1, (20, 24)))[0]
    np.testing.assert_array_equal(out[24, 20], generated[0, 24, 20])  # on the skeleton
    np.testing.assert_array_equal(out[24, 20 + RADIUS], generated[0, 24, 20 + RADIUS])  # the disc's edge + radius - feather
    far = int(np.ceil(FAR)) + 2
    np.testing.assert_array_equal(out[:, 20 + far:], reference[:, 20 + far:])
    np.testing.assert_array_equal(out[24 + far:], reference[24 + far:])
    halfway = (generated[0, 24, 21 + RADIUS].astype(int) + reference[24, 21 + RADIUS]) / 2  # the disc's edge + radius
    assert np.abs(out[24, 21 + RADIUS] - halfway).max() <= 1


def test_the_model_keeps_where_the_hands_have_been_since_the_reference_until_a_reset():
    """What a hand passed over (an object it pushed, the table it uncovered) keeps the model's pixels;
    a re-anchor starts the swept region afresh."""
    reference, generated = _images(2)
    compositor = ReferenceCompositor(RADIUS, FEATHER)
    compositor.reset(reference)
    out = compositor.apply(generated, _control(2, (15, 20), (60, 20)))
    np.testing.assert_array_equal(out[1, 20, 15], generated[1, 20, 15])  # frame 0's hand position, in frame 1
    np.testing.assert_array_equal(out[1, 20, 60], generated[1, 20, 60])
    compositor.reset(reference)
    out = compositor.apply(generated[1:], _control(1, (60, 20)))
    np.testing.assert_array_equal(out[0, 20, 15], reference[20, 15])


def test_bad_input_is_a_clear_error():
    reference, generated = _images(2)
    compositor = ReferenceCompositor(RADIUS, FEATHER)
    with pytest.raises(RuntimeError, match="reset"):
        compositor.apply(generated, _control(2))
    compositor.reset(reference)
    with pytest.raises(ValueError, match="differ"):
        compositor.apply(generated, _control(1))
    with pytest.raises(ValueError, match="feather_px <= radius_px"):
        ReferenceCompositor(-1, FEATHER)


def test_the_stream_composites_as_the_evaluation_does_and_only_for_a_static_camera():
    """A StreamingWorldModel with a compositing radius returns its raw frames composited on the reference
    with the control frames it was conditioned on: exactly composite_clip (the teacher's path) of the same
    stream without a static camera. Pixels far from the hands are the reference's, and a null action
    streams the reference itself."""
    config = replace(get_config("tiny"), composite_radius_px=RADIUS, composite_feather_px=FEATHER)
    rng = np.random.default_rng(1)
    reference = rng.integers(0, 256, (config.height, config.width, 3), dtype=np.uint8)
    control = np.zeros((8, config.height, config.width, 3), dtype=np.uint8)
    for i in range(8):
        cv2.circle(control[i], (20 + 2 * i, 30), 2, (255, 128, 0), -1)
    streams, conditioned = {}, {}
    for static in (True, False):
        torch.manual_seed(0)
        model = StreamingWorldModel(config, seed=2, static_camera=static)
        model.reset(reference)
        for i in range(8):
            model.push_skeleton(control[i], stamp=(i + 1) / config.fps)
        blocks = [(model.step(), model.last_control) for _ in range(2)]
        streams[static] = np.concatenate([frames for frames, _ in blocks])
        conditioned[static] = np.concatenate([control_frames for _, control_frames in blocks])
    np.testing.assert_array_equal(conditioned[True], conditioned[False])
    np.testing.assert_array_equal(streams[True], composite_clip(config, reference, conditioned[True], streams[False], True))
    assert np.abs(streams[True][:, :, 50:].astype(int) - reference[:, 50:]).max() == 0  # far from every hand
    assert np.abs(streams[False][:, :, 50:].astype(int) - reference[:, 50:]).max() > 0  # the raw model's pixels

    torch.manual_seed(0)
    model = StreamingWorldModel(config, seed=2)
    model.reset(reference)
    np.testing.assert_array_equal(model.step(), np.repeat(reference[None], 4, axis=0))  # null action: the robot holds


def test_the_seam_is_linear_between_radius_minus_and_plus_feather_at_any_size():
    """wan2.2-ti2v-5b's settings (32 px, feather 12, at 832x480): the model's weight is 1 up to
    radius - feather from the skeleton, 0 from radius + feather, and halfway at the radius."""
    config = get_config("wan2.2-ti2v-5b")
    radius, feather = config.composite_radius_px, config.composite_feather_px
    rng = np.random.default_rng(2)
    control = np.zeros((config.height, config.width, 3), dtype=np.uint8)
    control[240, 400] = (90, 30, 200)  # one skeleton pixel
    compositor = ReferenceCompositor(radius, feather)
    compositor.reset(rng.integers(0, 256, control.shape, dtype=np.uint8))
    weight = compositor.mask(control)
    row = weight[240, 400:]
    assert row[: int(radius - feather) + 1].min() == 1.0
    assert row[radius] == pytest.approx(0.5, abs=0.05)
    assert row[int(radius + feather) + 1:].max() == 0.0
    with pytest.raises(ValueError, match="feather_px <= radius_px"):
        ReferenceCompositor(4, 5.0)
