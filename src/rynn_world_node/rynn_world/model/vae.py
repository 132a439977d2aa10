"""Streaming use of diffusers' AutoencoderKLWan: encode a live skeleton stream, decode a live latent stream.

AutoencoderKLWan's causal 3D convolutions carry a feature cache across temporal chunks (its
`_feat_map` / `_enc_feat_map`), but `encode`/`decode` clear it on every call. These wrappers own
their caches and feed the same chunking the whole-clip methods use (encoder: the first frame
alone, then chunks of 4 frames; decoder: one latent frame at a time), so a clip pushed piece by
piece gives the whole-clip result. Latents are normalised with the VAE config's
latents_mean / latents_std, which is the space the DiT works in.
"""

import numpy as np
import torch
import torch.nn.functional as F
from diffusers import AutoencoderKLWan
from diffusers.models.autoencoders.autoencoder_kl_wan import WanCausalConv3d, WanRMS_norm, patchify, unpatchify

from .placement import place


def build_vae(vae_config: dict, device=None, dtype=torch.float32) -> AutoencoderKLWan:
    return place(AutoencoderKLWan(**vae_config), device, dtype).eval()


def _latent_norm(vae: AutoencoderKLWan, device, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    mean = torch.tensor(vae.config.latents_mean, device=device, dtype=dtype).view(1, -1, 1, 1, 1)
    std = torch.tensor(vae.config.latents_std, device=device, dtype=dtype).view(1, -1, 1, 1, 1)
    if mean.shape[1] != vae.config.z_dim or std.shape[1] != vae.config.z_dim:
        raise ValueError(f"latents_mean/std need {vae.config.z_dim} entries, got {mean.shape[1]}/{std.shape[1]}")
    return mean, std


def _count_causal_convs(module: torch.nn.Module) -> int:
    return sum(isinstance(m, WanCausalConv3d) for m in module.modules())


class _OneDNNCausalConv3d(WanCausalConv3d):
    """WanCausalConv3d calling oneDNN's convolution directly, spatial zero padding folded into it.

    For batch-1 video with few channels PyTorch's dispatch heuristic picks the vol2col
    ("slow_conv3d") kernel, 3-5x slower on CPU than oneDNN for these shapes; same weights, same
    maths, float rounding differs (~1e-5)."""

    def forward(self, x, cache_x=None) -> torch.Tensor:
        time_pad = self._padding[4]
        if cache_x is not None and time_pad > 0:
            x = torch.cat([cache_x.to(x.device), x], dim=2)
            time_pad -= cache_x.shape[2]
        if time_pad > 0:
            x = F.pad(x, (0, 0, 0, 0, time_pad, 0))
        spatial = (0, self._padding[2], self._padding[0])
        return torch.ops.aten.mkldnn_convolution(x, self.weight, self.bias, spatial, self.stride, self.dilation, self.groups)


class _FusedRMSNorm(WanRMS_norm):
    """WanRMS_norm as x * rsqrt(sum x^2) (F.normalize over dim 1 of a 5-D tensor is a slow strided
    reduction on CPU); equal to x / max(|x|, 1e-12) up to float rounding."""

    def forward(self, x) -> torch.Tensor:
        if not self.channel_first or x.dtype != torch.float32:
            return super().forward(x)
        inverse_norm = torch.rsqrt((x * x).sum(dim=1, keepdim=True).clamp_min(1e-24))
        return x * inverse_norm * (self.scale * self.gamma) + self.bias


VAE_KERNELS = ("reference", "onednn")


def use_vae_kernels(vae: AutoencoderKLWan, kernels: str) -> AutoencoderKLWan:
    """Switch the VAE's causal convolutions and RMS norms between diffusers' own ("reference")
    and the CPU-fast versions above ("onednn", float32 on CPU only), in place; same weights."""
    if kernels not in VAE_KERNELS:
        raise ValueError(f"vae kernels must be one of {VAE_KERNELS}, got {kernels!r}")
    if kernels == "onednn" and (vae.device.type != "cpu" or vae.dtype != torch.float32):
        raise ValueError(f"onednn VAE kernels need float32 on the CPU, the VAE is {vae.dtype} on {vae.device}")
    swaps = {WanCausalConv3d: _OneDNNCausalConv3d, WanRMS_norm: _FusedRMSNorm}
    if kernels == "reference":
        swaps = {fast: plain for plain, fast in swaps.items()}
    for module in vae.modules():
        if type(module) in swaps:
            module.__class__ = swaps[type(module)]
    return vae


class StreamingVAEEncoder:
    """Pixels (B, 3, n, H, W) in [-1, 1] in, normalised latent frames out as soon as they exist."""

    def __init__(self, vae: AutoencoderKLWan):
        self.vae = vae
        self.chunk = vae.config.scale_factor_temporal
        self.reset()

    def reset(self) -> None:
        self._cache = [None] * _count_causal_convs(self.vae.encoder)
        self._pending: torch.Tensor | None = None
        self._started = False

    @torch.no_grad()
    def push(self, frames: torch.Tensor) -> torch.Tensor | None:
        """Returns (B, z, m, h, w) for the latent frames completed by these frames, or None."""
        pending = frames if self._pending is None else torch.cat([self._pending, frames], dim=2)
        outputs = []
        while pending.shape[2] > 0:
            need = self.chunk if self._started else 1
            if pending.shape[2] < need:
                break
            outputs.append(self._encode_chunk(pending[:, :, :need]))
            pending = pending[:, :, need:]
            self._started = True
        self._pending = pending if pending.shape[2] else None
        return torch.cat(outputs, dim=2) if outputs else None

    def _encode_chunk(self, frames: torch.Tensor) -> torch.Tensor:
        vae = self.vae
        x = frames.to(device=vae.device, dtype=vae.dtype)
        if vae.config.patch_size is not None:
            x = patchify(x, patch_size=vae.config.patch_size)
        h = vae.quant_conv(vae.encoder(x, feat_cache=self._cache, feat_idx=[0]))
        mean, std = _latent_norm(vae, h.device, h.dtype)
        return (h[:, : vae.config.z_dim] - mean) / std  # the posterior mode


class StreamingVAEDecoder:
    """Normalised latent frames in, pixels in [-1, 1] out: 1 frame for the first latent, then 4 each."""

    def __init__(self, vae: AutoencoderKLWan):
        self.vae = vae
        self.reset()

    def reset(self) -> None:
        self._cache = [None] * _count_causal_convs(self.vae.decoder)
        self._first = True

    @torch.no_grad()
    def push(self, latents: torch.Tensor) -> torch.Tensor:
        vae = self.vae
        mean, std = _latent_norm(vae, vae.device, vae.dtype)
        x = vae.post_quant_conv(latents.to(device=vae.device, dtype=vae.dtype) * std + mean)
        frames = []
        for i in range(x.shape[2]):
            out = vae.decoder(x[:, :, i : i + 1], feat_cache=self._cache, feat_idx=[0], first_chunk=self._first)
            self._first = False
            frames.append(out)
        out = torch.cat(frames, dim=2)
        if vae.config.patch_size is not None:
            out = unpatchify(out, patch_size=vae.config.patch_size)
        return out.clamp(-1.0, 1.0)

    def prime(self, latents: torch.Tensor) -> None:
        """Start the stream on these latents (a reference) without keeping their frames; the VAE's
        causal caches need the whole decode."""
        self.push(latents)


def rgb_to_tensor(frames: np.ndarray, device=None, dtype=torch.float32) -> torch.Tensor:
    """(T, H, W, 3) uint8 -> (1, 3, T, H, W) in [-1, 1]."""
    x = torch.from_numpy(np.ascontiguousarray(frames)).to(device=device)
    return (x.permute(3, 0, 1, 2).unsqueeze(0).to(dtype) / 127.5) - 1.0


def tensor_to_rgb(video: torch.Tensor) -> np.ndarray:
    """(1, 3, T, H, W) in [-1, 1] -> (T, H, W, 3) uint8."""
    x = ((video[0].float().clamp(-1, 1) + 1.0) * 127.5).round().to(torch.uint8)
    return x.permute(1, 2, 3, 0).cpu().numpy()
