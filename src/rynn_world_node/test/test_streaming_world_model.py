"""StreamingWorldModel API, input handling and the skeleton frame clock."""

import numpy as np
import pytest
import torch

from rynn_world.frame_clock import FrameClockResampler
from rynn_world.model.configs import get_config
from rynn_world.model.teacher import generate_bidirectional
from rynn_world.skeleton import CameraIntrinsics
from rynn_world.streaming import STAGES, StreamingWorldModel

CFG = get_config("tiny")
K = CameraIntrinsics(fx=80.0, fy=80.0, cx=32.0, cy=32.0, width=64, height=64)


def _hands(offset=0.0):
    hands = np.random.default_rng(0).normal(0.0, 0.03, (2, 21, 3))
    hands[..., 2] += 0.5 + offset
    return hands


@pytest.fixture(scope="module")
def model():
    return StreamingWorldModel(CFG, intrinsics=K, seed=0)


def test_push_or_step_before_reset_is_a_clear_error():
    fresh = StreamingWorldModel(CFG, intrinsics=K)
    with pytest.raises(RuntimeError, match="reset"):
        fresh.push_skeleton(_hands())
    with pytest.raises(RuntimeError, match="reset"):
        fresh.step()


def test_reference_images_are_converted_or_rejected(model):
    model.reset(np.full((30, 50), 128, dtype=np.uint8))  # grayscale, other size
    model.reset(np.zeros((64, 64, 4), dtype=np.uint8))  # RGBA
    model.reset(np.ones((64, 64, 3), dtype=np.float32) * 0.5)  # float in [0, 1]
    with pytest.raises(ValueError, match="reference image"):
        model.reset(np.zeros((64, 64, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match="reference image"):
        model.reset(np.full((64, 64, 3), 300.0))


def test_step_returns_four_frames_per_latent_with_stage_timings(model):
    model.reset(np.zeros((64, 64, 3), dtype=np.uint8))
    for i in range(4):
        model.push_skeleton(_hands(0.01 * i), stamp=i / 16)
    frames = model.step()
    assert frames.shape == (4, 64, 64, 3) and frames.dtype == np.uint8
    assert set(model.timings.last) == set(STAGES) and all(model.timings.last[s] > 0 for s in STAGES)
    assert model.timings.last["total"] >= model.timings.last["dit"]
    assert model.step().shape == (4, 64, 64, 3)  # no new skeleton: the newest one is held


def test_stream_is_deterministic_for_a_seed():
    outputs = []
    for _ in range(2):
        m = StreamingWorldModel(CFG, intrinsics=K, seed=3)
        m.reset(np.full((64, 64, 3), 90, dtype=np.uint8))
        m.push_skeleton(_hands(), stamp=0.0)
        outputs.append(np.concatenate([m.step(), m.step()]))
    np.testing.assert_array_equal(outputs[0], outputs[1])


def test_joint_input_without_intrinsics_is_rejected_but_images_work():
    m = StreamingWorldModel(CFG)
    m.reset(np.zeros((64, 64, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match="intrinsics"):
        m.push_skeleton(_hands())
    m.push_skeleton(np.zeros((64, 64, 3), dtype=np.uint8), stamp=0.0)
    assert m.step().shape == (4, 64, 64, 3)


def test_frame_clock_thins_fast_input_and_holds_slow_input():
    clock = FrameClockResampler(fps=16)
    for i in range(12):  # 48 Hz input: three samples per model tick
        clock.push(i, stamp=i / 48)
    assert clock.take(4) == [0, 3, 6, 9]
    slow = FrameClockResampler(fps=16)
    slow.push("a", 0.0)
    slow.push("b", 0.2)  # 5 Hz input
    assert slow.take(4) == ["a", "a", "a", "a"]  # ticks 0 .. 0.1875 precede "b"
    assert slow.take(2) == ["b", "b"]
    assert FrameClockResampler(16).take(4) is None


def test_frame_clock_jumps_to_newest_when_behind_and_rejects_time_travel():
    clock = FrameClockResampler(fps=16)
    for i in range(40):
        clock.push(i, stamp=i / 16)
    assert clock.take(4) == [36, 37, 38, 39]
    with pytest.raises(ValueError, match="backwards"):
        clock.push(0, stamp=0.0)


@torch.no_grad()
def test_bidirectional_teacher_keeps_reference_frame(model):
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(1, CFG.latent_channels, 1, 8, 8, generator=g)
    for sampler in ("euler", "unipc"):
        out = generate_bidirectional(model.transformer, ref, None, num_frames=3, num_steps=2, sampler=sampler, generator=g)
        assert out.shape == (1, CFG.latent_channels, 3, 8, 8) and torch.isfinite(out).all()
        torch.testing.assert_close(out[:, :, :1], ref)


def test_reanchor_on_the_last_frame_and_chunk_length_checks():
    m = StreamingWorldModel(CFG, intrinsics=K, reanchor_every=9)
    with pytest.raises(RuntimeError, match="re-anchor"):
        m.reset()  # nothing generated yet
    m.reset(np.full((64, 64, 3), 90, dtype=np.uint8))
    m.push_skeleton(_hands(), stamp=0.0)
    m.step()
    assert not m.reanchor_due  # reference + 4 frames; one more block fits in 9
    last = m.step()[-1]
    assert m.reanchor_due
    m.reset(keep_clock=True)
    np.testing.assert_array_equal(m.last_frame, last)
    assert not m.reanchor_due
    with pytest.raises(ValueError, match="reanchor_every"):
        m.reanchor_every = 4  # cannot hold the reference and one block
