"""Bidirectional teacher sampling: the whole clip at once, reference frame held clean at t = 0."""

import torch

from .. import flow_matching as fm
from .transformer import RynnWorldTransformer


@torch.no_grad()
def generate_bidirectional(
    transformer: RynnWorldTransformer,
    reference_latent: torch.Tensor,
    control: torch.Tensor | None,
    num_frames: int,
    num_steps: int = 50,
    shift: float = 5.0,
    sampler: str = "unipc",
    text_embeds: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """(B, C, num_frames, h, w) latents whose frame 0 is the (B, C, 1, h, w) reference latent."""
    b, c, _, h, w = reference_latent.shape
    noise = torch.randn((b, c, num_frames, h, w), generator=generator, device=reference_latent.device,
                        dtype=reference_latent.dtype)

    def reimpose(x):
        return torch.cat([reference_latent, x[:, :, 1:]], dim=2)

    def velocity(x, timestep):
        frame_t = torch.full((b, num_frames), timestep, device=x.device)
        frame_t[:, 0] = 0.0
        return transformer(x, frame_t, control=control, text_embeds=text_embeds)

    if sampler == "unipc":
        return fm.unipc_sample(velocity, noise, num_steps, shift, reimpose=reimpose)
    if sampler == "euler":
        return fm.euler_sample(velocity, noise, fm.teacher_sigmas(num_steps, shift), reimpose=reimpose)
    raise ValueError(f"sampler must be 'unipc' or 'euler', got {sampler!r}")
