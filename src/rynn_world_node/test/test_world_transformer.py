"""World-model DiT: diffusers parity, control branch, block-causal streaming with the KV cache."""

import pytest
import torch
from diffusers import WanTransformer3DModel

from rynn_world.model.attention import block_causal_mask
from rynn_world.model.configs import get_config
from rynn_world.model.transformer import RynnWorldTransformer

CFG = get_config("tiny").transformer
C = CFG["in_channels"]
TOKENS_PER_FRAME = 16  # 8x8 latent, 2x2 patches


def _models(seed=0):
    torch.manual_seed(seed)
    base = WanTransformer3DModel(**CFG).eval()
    model = RynnWorldTransformer(**CFG, null_text_tokens=4).eval()
    model.load_state_dict(base.state_dict(), strict=False)
    return base, model


def _inputs(frames=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    latents = torch.randn(2, C, frames, 8, 8, generator=g)
    control = torch.randn(2, C, frames, 8, 8, generator=g)
    text = torch.randn(2, 5, CFG["text_dim"], generator=g)
    return latents, control, text


@torch.no_grad()
def test_matches_diffusers_wan_for_per_frame_and_scalar_timesteps():
    base, model = _models()
    latents, _, text = _inputs()
    per_frame = torch.tensor([[0.0, 500.0, 500.0], [0.0, 300.0, 300.0]])
    expected = base(latents, per_frame.repeat_interleave(TOKENS_PER_FRAME, dim=1), text).sample  # TI2V per-token
    assert (model(latents, per_frame, text_embeds=text) - expected).abs().max() < 1e-4
    scalar = torch.tensor([700.0, 200.0])
    assert (model(latents, scalar, text_embeds=text) - base(latents, scalar, text).sample).abs().max() < 1e-4


@torch.no_grad()
def test_zero_initialised_control_leaves_base_output_unchanged():
    base, model = _models()
    latents, control, text = _inputs()
    assert model.control_scale.item() == pytest.approx(0.1)
    without = model(latents, 400.0, text_embeds=text)
    with_control = model(latents, 400.0, control=control, text_embeds=text)
    torch.testing.assert_close(with_control, without, rtol=0, atol=1e-6)
    torch.nn.init.normal_(model.control_patch_embedding.weight, std=0.1)
    assert (model(latents, 400.0, control=control, text_embeds=text) - without).abs().max() > 1e-3


def test_control_statistics_update_only_when_observed_and_are_saved():
    _, model = _models()
    latents, control, text = _inputs()
    control = control * 3.0 + 2.0
    model.train()  # training mode alone must not touch the statistics (forward is also used by rollouts)
    model(latents, 400.0, control=control, text_embeds=text)
    assert torch.equal(model.control_stats.control_mean, torch.zeros(C))
    assert torch.equal(model.control_stats.latent_std, torch.ones(C))
    model.control_stats.observe(control, latents)
    momentum = model.control_stats.momentum
    per_channel = control.transpose(0, 1).flatten(1)
    torch.testing.assert_close(model.control_stats.control_mean, momentum * per_channel.mean(1))
    torch.testing.assert_close(model.control_stats.control_std,
                               (1 - momentum) + momentum * per_channel.std(1, unbiased=False))
    torch.testing.assert_close(model.control_stats.latent_mean, momentum * latents.transpose(0, 1).flatten(1).mean(1))
    state = model.state_dict()
    for key in ("control_patch_embedding.weight", "control_scale", "control_stats.control_mean",
                "control_stats.latent_std", "null_text_embedding"):
        assert key in state


@torch.no_grad()
def test_aligned_control_has_video_latent_statistics():
    _, model = _models()
    stats = model.control_stats
    stats.control_mean.fill_(2.0), stats.control_std.fill_(3.0), stats.latent_mean.fill_(-1.0), stats.latent_std.fill_(0.5)
    g = torch.Generator().manual_seed(3)
    control = torch.randn(4, C, 4, 8, 8, generator=g) * 3.0 + 2.0
    aligned = stats(control)
    assert aligned.mean().item() == pytest.approx(-1.0, abs=0.05)
    assert aligned.std().item() == pytest.approx(0.5, abs=0.05)


@torch.no_grad()
def test_null_text_embedding_is_used_when_text_is_absent():
    _, model = _models()
    latents, _, _ = _inputs()
    null_text = model.null_text_embedding.unsqueeze(0).expand(2, -1, -1)
    torch.testing.assert_close(model(latents, 300.0), model(latents, 300.0, text_embeds=null_text))


@pytest.mark.parametrize("block_frames", [1, 2])
@torch.no_grad()
def test_streaming_equals_full_sequence_block_causal_forward(block_frames):
    _, model = _models()
    torch.nn.init.normal_(model.control_patch_embedding.weight, std=0.1)
    num_blocks, window = 3, 3
    frames = 1 + num_blocks * block_frames
    latents, control, text = _inputs(frames)
    timesteps = torch.rand(2, frames, generator=torch.Generator().manual_seed(4)) * 1000
    timesteps[:, 0] = 0.0
    mask = block_causal_mask(frames, TOKENS_PER_FRAME, block_frames)
    full = model(latents, timesteps, control=control, text_embeds=text, attention_mask=mask)
    bidirectional = model(latents, timesteps, control=control, text_embeds=text)
    assert (full - bidirectional)[:, :, :-block_frames].abs().max() > 1e-3, "the mask must matter"

    cache = model.new_cache(2, TOKENS_PER_FRAME, block_frames, window)
    context_kv = model.context_kv(model.embed_text(text, 2, latents.dtype))
    rope = model.rope_table(4, 4, latents.device)
    starts = [0] + [1 + i * block_frames for i in range(num_blocks)]
    for start in starts:
        stop = 1 if start == 0 else start + block_frames
        sl = slice(start, stop)
        out = model.forward_cached(latents[:, :, sl], timesteps[:, sl], cache, context_kv, rope,
                                   control=control[:, :, sl], commit=True)
        assert (out - full[:, :, sl]).abs().max() < 1e-4, f"block starting at frame {start}"


@torch.no_grad()
def test_rolling_window_keeps_memory_constant_over_a_long_stream():
    _, model = _models()
    cache = model.new_cache(1, TOKENS_PER_FRAME, block_frames=1, window_blocks=3)
    pointer, nbytes = cache.storage.data_ptr(), cache.nbytes
    context_kv = model.context_kv(model.embed_text(None, 1, torch.float32))
    rope = model.rope_table(4, 4, "cpu")
    g = torch.Generator().manual_seed(5)
    model.forward_cached(torch.randn(1, C, 1, 8, 8, generator=g), 0.0, cache, context_kv, rope, commit=True)
    for _ in range(200):
        out = model.forward_cached(torch.randn(1, C, 1, 8, 8, generator=g), 0.0, cache, context_kv, rope, commit=True)
        assert cache.storage.data_ptr() == pointer and cache.nbytes == nbytes
        assert cache.attended_tokens(TOKENS_PER_FRAME) <= cache.capacity
    assert torch.isfinite(out).all()
    assert cache.filled_blocks == 3
    assert cache.key_frame_positions(1).max().item() == 4  # re-indexed: bounded however long the stream
