"""Refining the transformer's patch grid: a latent constant over each trained patch embeds every fine
token as the trained model embedded its patch, a fine token predicts the mean of the trained model's
predictions for its cells, and the refined checkpoint streams through the node's loader."""

import numpy as np
import pytest
import torch

from rynn_world.model.configs import get_config
from rynn_world.nodes.model_loading import load_streaming_model
from rynn_world.skeleton import CameraIntrinsics
from rynn_world.streaming import StreamingWorldModel
from rynn_world.training.refine_patches import fold_factors, main, refine_patches

CONFIG = get_config("tiny")
K = CameraIntrinsics(fx=80.0, fy=80.0, cx=32.0, cy=32.0, width=64, height=64)


def trained_transformer():
    torch.manual_seed(3)
    transformer = StreamingWorldModel(CONFIG, intrinsics=K, seed=5).transformer
    with torch.no_grad():  # the control embedding starts at zero; give every resized weight values
        for p in transformer.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return transformer


def test_only_a_finer_spatial_patch_is_accepted():
    assert fold_factors((1, 2, 2), (1, 1, 1)) == (1, 2, 2)
    assert fold_factors((1, 2, 2), (1, 1, 2)) == (1, 2, 1)
    for bad in [(1, 2, 2), (2, 1, 1), (1, 3, 1), (1, 4, 4), (1, 1)]:
        with pytest.raises(ValueError):
            fold_factors((1, 2, 2), bad)


def test_a_patch_constant_latent_embeds_every_fine_token_as_its_patch():
    coarse = trained_transformer()
    fine = refine_patches(coarse, (1, 1, 1))
    latents = torch.randn(1, CONFIG.latent_channels, 2, 4, 4).repeat_interleave(2, 3).repeat_interleave(2, 4)
    control = torch.randn(1, CONFIG.latent_channels, 2, 4, 4).repeat_interleave(2, 3).repeat_interleave(2, 4)
    with torch.no_grad():
        coarse_tokens = coarse.embed_video(latents, control).view(1, 2, 4, 4, -1)
        fine_tokens = fine.embed_video(latents, control).view(1, 2, 8, 8, -1)
    expected = coarse_tokens.repeat_interleave(2, 2).repeat_interleave(2, 3)
    torch.testing.assert_close(fine_tokens, expected, rtol=1e-5, atol=1e-5)


def test_a_fine_token_predicts_the_mean_of_its_cells():
    coarse = trained_transformer()
    fine = refine_patches(coarse, (1, 1, 1))
    hidden = torch.randn(5, coarse.proj_out.in_features)
    with torch.no_grad():
        per_cell = coarse.proj_out(hidden).view(5, 1, 2, 2, CONFIG.latent_channels)  # (pt, ph, pw, C)
        torch.testing.assert_close(fine.proj_out(hidden), per_cell.mean(dim=(1, 2, 3)), rtol=1e-5, atol=1e-6)
    for name, value in coarse.state_dict().items():  # everything else is the trained model's
        if not name.startswith(("patch_embedding.", "control_patch_embedding.", "proj_out.")):
            torch.testing.assert_close(fine.state_dict()[name], value, rtol=0, atol=0)


def test_a_refined_checkpoint_streams_through_the_nodes_loader(tmp_path):
    original = StreamingWorldModel(CONFIG, transformer=trained_transformer(), intrinsics=K, seed=5)
    original.transformer.save_pretrained(tmp_path / "coarse" / "transformer")
    original.vae.save_pretrained(tmp_path / "coarse" / "vae")
    main(["--checkpoint", str(tmp_path / "coarse"), "--config", "tiny", "--patch", "1", "1", "1",
          "--out", str(tmp_path / "fine")])

    model, _ = load_streaming_model(CONFIG, str(tmp_path / "fine"), "cpu", seed=5, intrinsics=K)
    assert tuple(model.transformer.config.patch_size) == (1, 1, 1)
    model.reset(np.full((CONFIG.height, CONFIG.width, 3), 90, dtype=np.uint8))
    hands = np.random.default_rng(1).normal(0.0, 0.03, (2, 21, 3))
    hands[..., 2] += 0.5
    for i in range(model.frames_per_step):
        model.push_skeleton(hands, stamp=i / 16)
    frames = model.step()
    assert frames.shape == (model.frames_per_step, CONFIG.height, CONFIG.width, 3)
    grid_h, grid_w = CONFIG.latent_size
    assert model.sampler.cache.tokens_per_frame == grid_h * grid_w  # one token per latent cell, four times the coarse model's
