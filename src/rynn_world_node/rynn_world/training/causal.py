"""The causal student in training: teacher-forced flow matching and few-step rollouts through a
differentiable KV cache (paper Sec. 3.5)."""

import torch

from .. import flow_matching as fm
from ..model.attention import frame_block_ids
from ..model.kv_cache import TrainingKVCache
from ..model.transformer import RynnWorldTransformer


def teacher_forcing_mask(num_frames: int, tokens_per_frame: int, block_frames: int, device=None) -> torch.Tensor:
    """(N, N) mask over [clean frames 0..F-1 | noisy frames 1..F-1].

    Clean frames attend block-causally among themselves; a noisy frame attends to the clean
    frames of earlier blocks (the reference included) and to the noisy frames of its own block:
    exactly what a streaming block sees, a committed clean cache plus itself.
    """
    blocks = frame_block_ids(num_frames, block_frames, device)
    clean, noisy = blocks, blocks[1:]
    query = torch.cat([clean, noisy]).repeat_interleave(tokens_per_frame)
    key = query
    is_noisy = torch.cat([torch.zeros(num_frames, dtype=torch.bool, device=device),
                          torch.ones(num_frames - 1, dtype=torch.bool, device=device)]).repeat_interleave(tokens_per_frame)
    q_noisy, k_noisy = is_noisy[:, None], is_noisy[None, :]
    clean_to_clean = ~q_noisy & ~k_noisy & (key[None, :] <= query[:, None])
    noisy_to_clean = q_noisy & ~k_noisy & (key[None, :] < query[:, None])
    noisy_to_own_block = q_noisy & k_noisy & (key[None, :] == query[:, None])
    return clean_to_clean | noisy_to_clean | noisy_to_own_block


def causal_flow_matching_loss(model, latents, control, sigma, noise, block_frames: int) -> torch.Tensor:
    """Warm-up objective: MSE on the velocity of each noisy block given the clean past (Eq. 4)."""
    b, _, f, h, w = latents.shape
    p_t, p_h, p_w = model.config.patch_size if hasattr(model, "config") else (1, 2, 2)
    tokens = (h // p_h) * (w // p_w)
    s = sigma.view(-1, 1, 1, 1, 1).to(latents.dtype)
    noisy = fm.add_noise(latents[:, :, 1:], noise[:, :, 1:], s)
    x = torch.cat([latents, noisy], dim=2)
    timesteps = torch.cat([torch.zeros(b, f, device=latents.device),
                           (sigma * fm.NUM_TRAIN_TIMESTEPS)[:, None].expand(b, f - 1).float()], dim=1)
    both_control = None if control is None else torch.cat([control, control[:, :, 1:]], dim=2)
    positions = torch.cat([torch.arange(f), torch.arange(1, f)])
    mask = teacher_forcing_mask(f, tokens, block_frames, latents.device)
    velocity = model(x, timesteps, control=both_control, attention_mask=mask, frame_positions=positions)
    target = fm.velocity_target(latents[:, :, 1:], noise[:, :, 1:])
    return torch.nn.functional.mse_loss(velocity[:, :, f:].float(), target.float())


def student_rollout(student: RynnWorldTransformer, reference: torch.Tensor, control: torch.Tensor, num_frames: int,
                    sigmas: list[float], block_frames: int, window_blocks: int, generator: torch.Generator) -> torch.Tensor:
    """(B, C, num_frames, h, w) clean latents generated block by block, as the streaming sampler does.

    Per rollout one denoising step (drawn at random, as in Self-Forcing) keeps its graph; the
    steps before it run without gradients. Each block is then committed clean at t = 0 *with*
    gradients, so later blocks' losses reach earlier blocks through the KV cache.
    """
    b, c, _, h, w = reference.shape
    _, p_h, p_w = student.config.patch_size
    cache = TrainingKVCache(len(student.blocks), (h // p_h) * (w // p_w), block_frames, window_blocks)
    rope = student.rope_table(h // p_h, w // p_w, reference.device)
    context = student.context_kv(student.embed_text(None, b, reference.dtype))
    student.forward_cached(reference, 0.0, cache, context, rope, control=control[:, :, :1], commit=True)
    exit_step = int(torch.randint(len(sigmas) - 1, (1,), generator=generator))
    blocks = [reference]
    for start in range(1, num_frames, block_frames):
        block_control = control[:, :, start: start + block_frames]
        x = torch.randn((b, c, block_frames, h, w), generator=generator).to(reference)
        for i, (sigma, sigma_next) in enumerate(zip(sigmas[:-1], sigmas[1:])):
            with torch.set_grad_enabled(i == exit_step and torch.is_grad_enabled()):
                v = student.forward_cached(x, sigma * fm.NUM_TRAIN_TIMESTEPS, cache, context, rope, control=block_control)
                x0 = fm.predict_x0(x, v, sigma)
            if i == exit_step:
                break
            x = fm.add_noise(x0, torch.randn(x0.shape, generator=generator).to(x0), sigma_next)
        student.forward_cached(x0, 0.0, cache, context, rope, control=block_control, commit=True)
        blocks.append(x0)
    return torch.cat(blocks, dim=2)
