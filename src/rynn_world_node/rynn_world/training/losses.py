"""Flow-matching objectives with frame-0 conditioning (paper Eq. 1, 4) and the DMD update (Sec. 3.5).

In every objective the first latent frame is the reference image: it stays clean, gets timestep 0,
and is excluded from the loss; all other frames share one noise level per sample.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from accelerate.utils import extract_model_from_parallel

from .. import flow_matching as fm


def observe_control_statistics(model, clean_latents: torch.Tensor, control: torch.Tensor | None) -> None:
    """Update the Eq. 3 running statistics from a batch of *data*: clean video latents and their
    control. Only clean-data training steps call this (stage 1/2, the causal warm-up); student
    rollouts, critic updates and DMD scores never do, so noise never enters the statistics."""
    if control is None:
        return
    base = extract_model_from_parallel(model)
    if hasattr(base, "get_base_model"):  # peft (LoRA) wrapper
        base = base.get_base_model()
    base.control_stats.observe(batch_of_all_ranks(control), batch_of_all_ranks(clean_latents))


def batch_of_all_ranks(batch: torch.Tensor) -> torch.Tensor:
    """Every rank's batch, concatenated in rank order (a collective), so that statistics observed by
    every data-parallel rank stay the same on all of them; the batch itself with one process."""
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return batch
    parts = [torch.empty_like(batch) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, batch.contiguous())
    return torch.cat(parts)


def sample_sigmas(batch_size: int, shift: float, generator: torch.Generator, device,
                  low: float = 0.0, high: float = 1.0) -> torch.Tensor:
    """(B,) noise levels: uniform in [low, high], then warped by the Wan shift towards high noise."""
    u = low + (high - low) * torch.rand(batch_size, generator=generator)
    return fm.shift_sigma(u, shift).to(device)


def noised_with_reference(latents: torch.Tensor, noise: torch.Tensor, sigma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(x_sigma with a clean frame 0, (B, F) timesteps with 0 for frame 0)."""
    s = sigma.view(-1, 1, 1, 1, 1).to(latents.dtype)
    x = torch.cat([latents[:, :, :1], fm.add_noise(latents[:, :, 1:], noise[:, :, 1:], s)], dim=2)
    timesteps = (sigma * fm.NUM_TRAIN_TIMESTEPS)[:, None].repeat(1, latents.shape[2]).float()
    timesteps[:, 0] = 0.0
    return x, timesteps


def flow_matching_loss(model, latents: torch.Tensor, control: torch.Tensor | None, sigma: torch.Tensor,
                       noise: torch.Tensor, text_embeds: torch.Tensor | None = None) -> torch.Tensor:
    """MSE between the predicted and the true velocity (noise - x0) on the generated frames."""
    x, timesteps = noised_with_reference(latents, noise, sigma)
    velocity = model(x, timesteps, control=control, text_embeds=text_embeds)
    target = fm.velocity_target(latents, noise)
    return F.mse_loss(velocity[:, :, 1:].float(), target[:, :, 1:].float())


def dmd_generator_loss(sample: torch.Tensor, control, teacher, critic, sigma: torch.Tensor,
                       noise: torch.Tensor) -> torch.Tensor:
    """Distribution matching: move the student's samples along (fake score - real score).

    Both scores are x0 predictions at a random noise level of the student's own sample; the
    difference, normalised by the real prediction's error, is the gradient of the reverse KL.
    """
    with torch.no_grad():
        x, timesteps = noised_with_reference(sample.detach(), noise, sigma)
        s = sigma.view(-1, 1, 1, 1, 1)
        x0_real = fm.predict_x0(x, teacher(x, timesteps, control=control), s)
        x0_fake = fm.predict_x0(x, critic(x, timesteps, control=control), s)
        weight = (sample.detach() - x0_real)[:, :, 1:].abs().mean(dim=(1, 2, 3, 4), keepdim=True).clamp_min(1e-6)
        target = sample.detach() - (x0_fake - x0_real) / weight
    return 0.5 * F.mse_loss(sample[:, :, 1:].float(), target[:, :, 1:].float())
