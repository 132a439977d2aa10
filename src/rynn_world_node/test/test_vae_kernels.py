"""The CPU-fast VAE kernels ("onednn") compute what diffusers' own kernels compute."""

import pytest
import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import WanCausalConv3d, WanRMS_norm

from rynn_world.model.configs import get_config
from rynn_world.model.vae import StreamingVAEDecoder, StreamingVAEEncoder, build_vae, use_vae_kernels

CFG = get_config("tiny")


@torch.no_grad()
def stream(vae, clip, latents):
    encoder, decoder = StreamingVAEEncoder(vae), StreamingVAEDecoder(vae)
    encoded = torch.cat([encoder.push(clip[:, :, :1]), encoder.push(clip[:, :, 1:])], dim=2)
    decoded = torch.cat([decoder.push(latents[:, :, i : i + 1]) for i in range(latents.shape[2])], dim=2)
    return encoded, decoded


def test_onednn_kernels_match_the_reference_and_switch_back():
    torch.manual_seed(0)
    vae = build_vae(CFG.vae)
    g = torch.Generator().manual_seed(0)
    clip = torch.rand(1, 3, 9, CFG.height, CFG.width, generator=g) * 2 - 1
    latents = torch.randn(1, CFG.latent_channels, 3, 8, 8, generator=g)
    reference = stream(vae, clip, latents)
    use_vae_kernels(vae, "onednn")
    assert not any(type(m) in (WanCausalConv3d, WanRMS_norm) for m in vae.modules())
    fast = stream(vae, clip, latents)
    for want, got in zip(reference, fast):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    use_vae_kernels(vae, "reference")
    for want, got in zip(reference, stream(vae, clip, latents)):
        torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_onednn_kernels_refuse_other_dtypes_and_unknown_names():
    vae = build_vae(CFG.vae, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="float32 on the CPU"):
        use_vae_kernels(vae, "onednn")
    with pytest.raises(ValueError, match="one of"):
        use_vae_kernels(vae, "cudnn")
