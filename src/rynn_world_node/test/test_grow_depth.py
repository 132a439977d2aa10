"""Growing the transformer's depth: the grown checkpoint streams the trained model's frames
exactly, through the node's loader, and its new blocks learn (their outputs are not stuck at zero)."""

import numpy as np
import pytest
import torch

from rynn_world.model.configs import get_config
from rynn_world.nodes.model_loading import load_streaming_model
from rynn_world.skeleton import CameraIntrinsics
from rynn_world.streaming import StreamingWorldModel
from rynn_world.training.grow_depth import grow_depth, grown_positions, main

CONFIG = get_config("tiny")
K = CameraIntrinsics(fx=80.0, fy=80.0, cx=32.0, cy=32.0, width=64, height=64)


def stream(model: StreamingWorldModel, steps: int = 3) -> np.ndarray:
    model.reset(np.random.default_rng(0).integers(0, 255, (CONFIG.height, CONFIG.width, 3), dtype=np.uint8))
    hands = np.random.default_rng(1).normal(0.0, 0.03, (2, 21, 3))
    hands[..., 2] += 0.5
    frames = []
    for step in range(steps):
        for i in range(model.frames_per_step):
            model.push_skeleton(hands + 0.01 * (step * 4 + i), stamp=(step * 4 + i) / 16)
        frames.append(model.step())
    return np.concatenate(frames)


def trained_model() -> StreamingWorldModel:
    torch.manual_seed(3)
    model = StreamingWorldModel(CONFIG, intrinsics=K, seed=5)
    with torch.no_grad():  # the random init leaves out-projections small; make every block matter
        for p in model.transformer.parameters():
            p.add_(0.05 * torch.randn_like(p))
        model.transformer.control_scale.fill_(0.37)
    return model


def test_new_blocks_are_spread_after_the_trained_ones():
    assert grown_positions(3, 3) == [0, 1, 2]
    assert grown_positions(3, 6) == [0, None, 1, None, 2, None]
    assert grown_positions(3, 5) == [0, 1, None, 2, None]
    assert grown_positions(2, 7) == [0, None, None, 1, None, None, None]
    with pytest.raises(ValueError, match="cannot grow"):
        grown_positions(3, 2)


def test_a_grown_checkpoint_streams_the_trained_models_frames(tmp_path):
    original = trained_model()
    original.transformer.save_pretrained(tmp_path / "small" / "transformer")
    original.vae.save_pretrained(tmp_path / "small" / "vae")
    main(["--checkpoint", str(tmp_path / "small"), "--config", "tiny", "--layers", "5", "--out", str(tmp_path / "deep")])

    deep, _ = load_streaming_model(CONFIG, str(tmp_path / "deep"), "cpu", seed=5, intrinsics=K)
    assert len(deep.transformer.blocks) == 5 and deep.transformer.config.num_layers == 5
    same = StreamingWorldModel(CONFIG, transformer=original.transformer, vae=original.vae, intrinsics=K, seed=5)
    np.testing.assert_array_equal(stream(deep), stream(same))


def test_the_new_blocks_learn():
    grown = grow_depth(trained_model().transformer, 4).train()
    new_block = grown.blocks[1]  # grown_positions(2, 4) == [0, None, 1, None]
    query_before = new_block.attn1.to_q.weight.detach().clone()
    optimizer = torch.optim.SGD(grown.parameters(), lr=0.1)
    latents = torch.randn(1, CONFIG.latent_channels, 2, 8, 8)
    for _ in range(2):  # the first step moves the zeroed projections, the second the rest of the block
        grown(latents, 500.0).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    assert new_block.attn1.to_out[0].weight.abs().sum() > 0
    assert new_block.ffn.net[-1].weight.abs().sum() > 0
    assert not torch.equal(new_block.attn1.to_q.weight, query_before)
