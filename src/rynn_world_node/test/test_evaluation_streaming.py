"""Evaluation generates the students' frames with StreamingWorldModel exactly as the live node's
session drives it: the same frames, bit for bit, re-anchoring included."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from rynn_common.pipeline_stats import PipelineStats
from rynn_world.evaluation.generation import stream_clip
from rynn_world.live_session import LiveWorldSession, SessionSettings
from rynn_world.model.configs import get_config
from rynn_world.model.transformer import RynnWorldTransformer
from rynn_world.model.vae import build_vae
from rynn_world.skeleton import CameraIntrinsics, SkeletonRenderer, render_control
from rynn_world.streaming import StreamingWorldModel

CFG = get_config("tiny")
COMPOSITED = replace(CFG, composite_radius_px=3, composite_feather_px=1.0)  # reference compositing on
T0 = 1000.0
CLIP_FRAMES = 17
REANCHOR = 9  # the reference + 2 blocks: the 16 generated frames cross two re-anchors


class FakeClock:
    def __init__(self):
        self.now = T0

    def __call__(self):
        return self.now


def _clip():
    torch.manual_seed(0)
    transformer = RynnWorldTransformer(**CFG.transformer, null_text_tokens=CFG.null_text_tokens).eval()
    vae = build_vae(CFG.vae).eval()
    rng = np.random.default_rng(0)
    reference = rng.integers(0, 255, (CFG.height, CFG.width, 3), dtype=np.uint8)
    renderer = SkeletonRenderer(CameraIntrinsics(fx=80.0, fy=80.0, cx=CFG.width / 2, cy=CFG.height / 2,
                                                 width=CFG.width, height=CFG.height))
    joints = rng.normal(0.0, 0.03, (2, 21, 3)) + [0.0, 0.0, 0.5]
    moving = np.stack([joints + [0.01 * j, 0.0, 0.0] for j in range(CLIP_FRAMES)])
    control = render_control(renderer, moving, np.ones((CLIP_FRAMES, 2), bool))
    return transformer, vae, reference, control


def _live_frames(transformer, vae, reference, control, seed, config=CFG):
    """The node's path: LiveWorldSession (always digital, file reference) fed one control frame per tick."""
    clock = FakeClock()
    model = StreamingWorldModel(config, transformer=transformer, vae=vae, seed=seed)
    session = LiveWorldSession(model, PipelineStats(), SessionSettings(reanchor_every=REANCHOR, follow_mode=False,
                                                                       max_frame_age=100.0, publish_interval=1e-4),
                               clock=clock, file_reference=reference)
    frames = []
    for j in range(1, CLIP_FRAMES):
        clock.now = T0 + j / CFG.fps
        session.offer_skeleton(control[j], clock.now)
        while session.run_once() == 0.0:
            pass
        clock.now += 0.01
        while (frame := session.pop_due()) is not None:
            frames.append(frame.image)
    return np.stack(frames)


@pytest.mark.parametrize("config", [CFG, COMPOSITED], ids=["plain", "composited"])
def test_evaluation_frames_are_the_live_sessions(config):
    transformer, vae, reference, control = _clip()
    live = _live_frames(transformer, vae, reference, control, seed=3, config=config)
    evaluated = stream_clip(transformer, vae, config, reference, control, seed=3, reanchor_every=REANCHOR)
    assert evaluated.shape == live.shape == (CLIP_FRAMES - 1, CFG.height, CFG.width, 3)
    np.testing.assert_array_equal(evaluated, live)
    never_reanchored = stream_clip(transformer, vae, config, reference, control, seed=3, reanchor_every=None)
    assert np.abs(never_reanchored[8:].astype(int) - evaluated[8:]).max() > 0, "re-anchoring changes the frames"
    np.testing.assert_array_equal(never_reanchored[:8], evaluated[:8])


def test_a_replayed_episode_re_anchors_on_its_real_frame_of_that_instant():
    """anchor_frames[k] is the scene at time k / fps: given the stream's own frames it re-anchors
    exactly as on the last generated frame (an index off by one would differ); given other frames,
    only the frames after the first re-anchor change."""
    transformer, vae, reference, control = _clip()
    generated = stream_clip(transformer, vae, CFG, reference, control, seed=3, reanchor_every=REANCHOR)
    own = np.concatenate([reference[None], generated])
    np.testing.assert_array_equal(
        stream_clip(transformer, vae, CFG, reference, control, seed=3, reanchor_every=REANCHOR, anchor_frames=own), generated)
    other = np.full_like(own, 255)
    replayed = stream_clip(transformer, vae, CFG, reference, control, seed=3, reanchor_every=REANCHOR, anchor_frames=other)
    np.testing.assert_array_equal(replayed[: REANCHOR - 1], generated[: REANCHOR - 1])
    assert np.abs(replayed[REANCHOR - 1:].astype(int) - generated[REANCHOR - 1:]).max() > 0
