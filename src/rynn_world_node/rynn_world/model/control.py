"""Distribution alignment of the control latent (paper Eq. 3).

c~ = (c - mu_c) / sigma_c * sigma_z + mu_z maps the skeleton latent onto the statistics of the
video latent before the additive control patch embedding. The per-channel running estimates are
buffers, so they are saved with the weights and follow the model's device and dtype.
"""

import torch
from torch import nn


class ControlAlignment(nn.Module):
    def __init__(self, channels: int, momentum: float = 0.01, eps: float = 1e-5):
        super().__init__()
        if not 0 < momentum <= 1:
            raise ValueError(f"momentum must be in (0, 1], got {momentum}")
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("control_mean", torch.zeros(channels))
        self.register_buffer("control_std", torch.ones(channels))
        self.register_buffer("latent_mean", torch.zeros(channels))
        self.register_buffer("latent_std", torch.ones(channels))

    @torch.no_grad()
    def observe(self, control: torch.Tensor | None = None, clean_latents: torch.Tensor | None = None) -> None:
        """Momentum update from (B, C, T, H, W) batches of control and clean video latents."""
        for x, mean, std in ((control, self.control_mean, self.control_std), (clean_latents, self.latent_mean, self.latent_std)):
            if x is None:
                continue
            flat = x.detach().float().transpose(0, 1).flatten(1)
            mean.lerp_(flat.mean(dim=1).to(mean.dtype), self.momentum)
            std.lerp_(flat.std(dim=1, unbiased=False).to(std.dtype), self.momentum)

    def forward(self, control: torch.Tensor) -> torch.Tensor:
        shape = (1, -1, 1, 1, 1)
        scale = self.latent_std / (self.control_std + self.eps)
        return (control - self.control_mean.view(shape)) * scale.view(shape) + self.latent_mean.view(shape)
