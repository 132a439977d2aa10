"""A tiny streaming encoder of control frames, distilled from a config's VAE encoder (for CPU serving).

Every live step VAE-encodes its rendered hand skeletons (4 frames -> 1 latent frame): causal 3D
convolutions at full resolution, a large share of a step on one CPU core. Control frames are simple
(coloured skeleton lines on black), so a small 2D network reproduces the VAE's normalised latents
closely (TAEHV-style tiny autoencoders do the same for real-time video models); this is ours. It
keeps StreamingVAEEncoder's chunking, the first frame of a stream alone, then 4 frames per latent:

- each frame goes through a few strided 2D convolutions (8x down; cheap, most pixels are black);
- the 4 frames of a latent are merged by channel concatenation and a 1x1 convolution (a stream's
  first frame is repeated 4 times, as the VAE's causal padding sees it);
- memory blocks (model.tiny_decoder's) also see the previous latent frame's features, the only
  temporal state: streaming is exact with a one-latent cache and training runs a clip in parallel.

Trained by ``rynn_world.training.distill_tiny_encoder``; saved in diffusers layout as
``<checkpoint>/tiny_control_encoder/``.
"""

import itertools

import torch
import torch.nn.functional as F
from diffusers.configuration_utils import ConfigMixin, register_to_config
from diffusers.models.modeling_utils import ModelMixin
from torch import nn

from .tiny_decoder import MemoryBlock

TINY_ENCODER_DIR = "tiny_control_encoder"


class TinyControlEncoder(ModelMixin, ConfigMixin):
    @register_to_config
    def __init__(
        self,
        latent_channels: int = 32,
        temporal_downsample: int = 4,
        spatial_downsample: int = 8,
        frame_widths: tuple[int, ...] = (16, 32),
        latent_width: int = 40,
        memory_blocks: int = 2,
    ):
        super().__init__()
        if spatial_downsample != 2 ** (len(frame_widths) + 1):
            raise ValueError(f"spatial_downsample {spatial_downsample} needs {spatial_downsample.bit_length() - 2} "
                             f"frame widths (a 2x pixel unshuffle, then one per strided 2x stage), got {frame_widths}")
        widths = (3 * 4, *frame_widths)
        self.down = nn.ModuleList(nn.Conv2d(c_in, c_out, 3, stride=2, padding=1) for c_in, c_out in itertools.pairwise(widths))
        self.refine = nn.Conv2d(frame_widths[-1], frame_widths[-1], 3, padding=1)
        self.merge = nn.Conv2d(temporal_downsample * frame_widths[-1], latent_width, 1)
        self.memory = nn.ModuleList(MemoryBlock(latent_width) for _ in range(memory_blocks))
        self.to_latent = nn.Conv2d(latent_width, latent_channels, 3, padding=1)

    def forward(self, frames: torch.Tensor, memory: list[torch.Tensor] | None = None,
                first: bool = True) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """(B, 3, T, H, W) frames in [-1, 1] -> ((B, z, n, h, w) normalised latents, new memory).

        first: the frames start a stream, T = 1 + 4n' (the first frame alone makes the first latent);
        else T = 4n. memory: the previous latent frame's input to each memory block (None at a start)."""
        b, _, t, height, width = frames.shape
        n = self.config.temporal_downsample
        if (t - first) % n or t < first:
            raise ValueError(f"{'a stream start needs 1 + ' if first else 'need '}a multiple of {n} frames, got {t}")
        x = F.pixel_unshuffle(frames.permute(0, 2, 1, 3, 4).reshape(b * t, -1, height, width), 2)
        for conv in self.down:
            x = F.relu(conv(x))
        x = F.relu(self.refine(x))
        x = x.view(b, t, *x.shape[1:])
        if first:  # the stream's first frame alone: its features in all 4 slots
            x = torch.cat([x[:, :1].expand(b, n, *x.shape[2:]), x[:, 1:]], dim=1)
        latents = t // n if not first else 1 + (t - 1) // n
        x = F.relu(self.merge(x.reshape(b * latents, n * x.shape[2], *x.shape[3:])))
        new_memory = []
        for index, block in enumerate(self.memory):
            features = x.view(b, latents, *x.shape[1:])
            before = torch.zeros_like(features[:, :1]) if memory is None else memory[index].unsqueeze(1)
            past = torch.cat([before, features[:, :-1]], dim=1).flatten(0, 1)
            new_memory.append(features[:, -1])
            x = block(x, past)
        z = self.to_latent(x)
        return z.view(b, latents, *z.shape[1:]).permute(0, 2, 1, 3, 4), new_memory


class StreamingTinyControlEncoder:
    """StreamingVAEEncoder's contract for a TinyControlEncoder: frames in [-1, 1] in, normalised latent
    frames out as soon as they exist (the first frame of a stream alone, then every 4)."""

    def __init__(self, encoder: TinyControlEncoder):
        # channels_last: oneDNN's layout for these 2D convolutions on the CPU (as the tiny decoder)
        self.encoder = encoder.to(memory_format=torch.channels_last)
        self.chunk = encoder.config.temporal_downsample
        self.reset()

    def reset(self) -> None:
        self._memory: list[torch.Tensor] | None = None
        self._pending: torch.Tensor | None = None

    @torch.no_grad()
    def push(self, frames: torch.Tensor) -> torch.Tensor | None:
        """Returns (B, z, m, h, w) for the latent frames completed by these frames, or None."""
        param = self.encoder.merge.weight
        frames = frames.to(device=param.device, dtype=param.dtype)
        pending = frames if self._pending is None else torch.cat([self._pending, frames], dim=2)
        first = self._memory is None
        need = int(first)
        ready = 0 if pending.shape[2] < need else need + (pending.shape[2] - need) // self.chunk * self.chunk
        self._pending = pending[:, :, ready:] if ready < pending.shape[2] else None
        if ready == 0:
            return None
        latents, self._memory = self.encoder(pending[:, :, :ready], self._memory, first=first)
        return latents
