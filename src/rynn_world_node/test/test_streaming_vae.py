"""Streaming VAE encode/decode keeps the causal caches: piecewise == whole clip."""

import numpy as np
import torch

from rynn_world.model.configs import get_config
from rynn_world.model.vae import StreamingVAEDecoder, StreamingVAEEncoder, build_vae, rgb_to_tensor, tensor_to_rgb

CFG = get_config("tiny")


def _vae():
    torch.manual_seed(0)
    return build_vae(CFG.vae)


def _clip(frames=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(1, 3, frames, CFG.height, CFG.width, generator=g) * 2 - 1


@torch.no_grad()
def test_frame_by_frame_encode_equals_whole_clip():
    vae = _vae()
    clip = _clip()
    mean = torch.tensor(vae.config.latents_mean).view(1, -1, 1, 1, 1)
    std = torch.tensor(vae.config.latents_std).view(1, -1, 1, 1, 1)
    whole = (vae.encode(clip).latent_dist.mode() - mean) / std
    encoder = StreamingVAEEncoder(vae)
    pieces = [encoder.push(clip[:, :, t : t + 1]) for t in range(clip.shape[2])]
    assert [p is not None for p in pieces] == [True, False, False, False, True, False, False, False, True]
    streamed = torch.cat([p for p in pieces if p is not None], dim=2)
    assert streamed.shape == whole.shape == (1, CFG.latent_channels, 3, 8, 8)
    torch.testing.assert_close(streamed, whole, atol=1e-5, rtol=1e-4)
    # uneven pushes give the same result too
    encoder.reset()
    uneven = [encoder.push(clip[:, :, a:b]) for a, b in ((0, 3), (3, 4), (4, 9))]
    torch.testing.assert_close(torch.cat([p for p in uneven if p is not None], dim=2), whole, atol=1e-5, rtol=1e-4)


@torch.no_grad()
def test_latent_by_latent_decode_equals_whole_clip():
    vae = _vae()
    g = torch.Generator().manual_seed(1)
    latents = torch.randn(1, CFG.latent_channels, 3, 8, 8, generator=g)
    whole = vae.decode(latents).sample
    decoder = StreamingVAEDecoder(vae)
    pieces = [decoder.push(latents[:, :, i : i + 1]) for i in range(3)]
    assert [p.shape[2] for p in pieces] == [1, 4, 4]
    torch.testing.assert_close(torch.cat(pieces, dim=2), whole, atol=1e-5, rtol=1e-4)
    decoder.reset()
    torch.testing.assert_close(decoder.push(latents[:, :, :1]), whole[:, :, :1], atol=1e-5, rtol=1e-4)


def test_rgb_round_trip():
    rgb = np.random.default_rng(0).integers(0, 256, (2, 8, 8, 3), dtype=np.uint8)
    np.testing.assert_array_equal(tensor_to_rgb(rgb_to_tensor(rgb)), rgb)
