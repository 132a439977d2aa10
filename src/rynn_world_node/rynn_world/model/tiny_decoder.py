"""A tiny streaming video decoder distilled from a config's VAE decoder (for CPU serving).

The VAE's decoder is a stack of causal 3D convolutions: exact, but on one CPU core it is the
largest part of a streaming step. Real-time video world models replace it at serving time with a
small decoder trained to reproduce the big one's output (TAEHV-style tiny autoencoders); this is
ours. It works on the same normalised latents the DiT produces and emits the same frames per
latent (1 for the first latent of a stream, 4 for every later one):

- most of the work happens once per latent frame at low resolution: 2D convolutions plus
  memory blocks that also see the previous latent frame's features (the only temporal state, so
  streaming is exact with a one-frame cache and training runs a whole clip in parallel);
- a 1x1 convolution then splits the features into the latent's video frames, which two upsampling
  stages and a pixel shuffle turn into RGB.

Trained by ``rynn_world.training.distill_tiny_decoder``; saved in diffusers layout
(``config.json`` + safetensors) as ``<checkpoint>/tiny_decoder/``.
"""

import itertools

import torch
import torch.nn.functional as F
from diffusers.configuration_utils import ConfigMixin, register_to_config
from diffusers.models.modeling_utils import ModelMixin
from torch import nn

TINY_DECODER_DIR = "tiny_decoder"


def _conv(c_in: int, c_out: int, kernel: int = 3) -> nn.Conv2d:
    return nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2)


class MemoryBlock(nn.Module):
    """Residual block over [this frame's features, the previous frame's features]."""

    def __init__(self, channels: int):
        super().__init__()
        self.mix = _conv(2 * channels, channels)
        self.refine = _conv(channels, channels)

    def forward(self, x: torch.Tensor, past: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.mix(torch.cat([x, past], dim=1)))
        return F.relu(x + self.refine(h))


class TinyVideoDecoder(ModelMixin, ConfigMixin):
    @register_to_config
    def __init__(
        self,
        latent_channels: int = 32,
        temporal_upsample: int = 4,
        spatial_upsample: int = 8,
        latent_width: int = 64,
        memory_blocks: int = 2,
        frame_widths: tuple[int, ...] = (32, 16),
    ):
        super().__init__()
        if spatial_upsample != 2 ** (len(frame_widths) + 1):
            raise ValueError(f"spatial_upsample {spatial_upsample} needs {spatial_upsample.bit_length() - 2} "
                             f"frame widths (one per 2x stage, then a 2x pixel shuffle), got {frame_widths}")
        self.stem = _conv(latent_channels, latent_width)
        self.memory = nn.ModuleList(MemoryBlock(latent_width) for _ in range(memory_blocks))
        self.split = nn.Conv2d(latent_width, temporal_upsample * frame_widths[0], 1)
        widths = (frame_widths[0], *frame_widths)
        self.up = nn.ModuleList(_conv(c_in, c_out) for c_in, c_out in itertools.pairwise(widths))
        self.to_rgb = _conv(frame_widths[-1], 3 * 4)

    @property
    def memory_widths(self) -> list[int]:
        return [self.config.latent_width] * len(self.memory)

    def features(self, latents: torch.Tensor, memory: list[torch.Tensor] | None = None
                 ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The low-resolution part: (B * T, latent_width, h, w) features and the new memory (what
        the next latent frame's memory blocks see; all a stream needs of its reference frame)."""
        b, _, t, h, w = latents.shape
        x = latents.permute(0, 2, 1, 3, 4).reshape(b * t, -1, h, w)
        x = F.relu(self.stem(x))
        new_memory = []
        for index, block in enumerate(self.memory):
            frames = x.view(b, t, *x.shape[1:])
            before = torch.zeros_like(frames[:, :1]) if memory is None else memory[index].unsqueeze(1)
            past = torch.cat([before, frames[:, :-1]], dim=1).flatten(0, 1)
            new_memory.append(frames[:, -1])
            x = block(x, past)
        return x, new_memory

    def forward(self, latents: torch.Tensor, memory: list[torch.Tensor] | None = None,
                first: bool = True) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """(B, z, T, h, w) latents -> ((B, 3, n, H, W) frames in about [-1, 1], new memory).

        memory: the previous latent frame's input to each memory block (zeros at a stream start);
        first: the first latent is a stream start, decoded to one frame (its last split) as the VAE does."""
        b, t, h, w = latents.shape[0], latents.shape[2], latents.shape[3], latents.shape[4]
        x, new_memory = self.features(latents, memory)
        n = self.config.temporal_upsample
        x = F.relu(self.split(x)).reshape(b * t * n, -1, h, w)  # channel blocks -> frames (any memory layout)
        for conv in self.up:
            x = F.relu(conv(F.interpolate(x, scale_factor=2.0, mode="nearest")))
        rgb = F.pixel_shuffle(self.to_rgb(x), 2)
        rgb = rgb.reshape(b, t * n, 3, *rgb.shape[-2:]).permute(0, 2, 1, 3, 4)
        if first:
            rgb = rgb[:, :, n - 1:]
        return rgb, new_memory


class StreamingTinyDecoder:
    """StreamingVAEDecoder's contract for a TinyVideoDecoder: normalised latents in, frames in [-1, 1] out."""

    def __init__(self, decoder: TinyVideoDecoder):
        # channels_last: oneDNN's layout for these 2D convolutions, ~3x faster on the CPU (benchmark)
        self.decoder = decoder.to(memory_format=torch.channels_last)
        self.reset()

    def reset(self) -> None:
        self._memory: list[torch.Tensor] | None = None

    @torch.no_grad()
    def push(self, latents: torch.Tensor) -> torch.Tensor:
        param = self.decoder.stem.weight
        frames, self._memory = self.decoder(latents.to(device=param.device, dtype=param.dtype), self._memory,
                                            first=self._memory is None)
        return frames.clamp(-1.0, 1.0)

    @torch.no_grad()
    def prime(self, latents: torch.Tensor) -> None:
        """``push`` without the frames: a stream's reference latent only sets the memory (a quarter of
        a reference push's cost: its frames would be upsampled four times and three thrown away)."""
        param = self.decoder.stem.weight
        _, self._memory = self.decoder.features(latents.to(device=param.device, dtype=param.dtype), self._memory)
