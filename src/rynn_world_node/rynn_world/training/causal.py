"""The causal student in training: teacher-forced flow matching and few-step rollouts through a
differentiable KV cache (paper Sec. 3.5)."""

import torch

from .. import flow_matching as fm
from ..model.kv_cache import TrainingKVCache, stream_frame_positions, window_blocks_seen
from ..model.transformer import AttentionGroup, RynnWorldTransformer


def teacher_forcing_layout(num_frames: int, tokens_per_frame: int, block_frames: int,
                           window_blocks: int) -> tuple[torch.Tensor, list[AttentionGroup]]:
    """Query frame positions and attention groups over the sequence [clean 0..F-1 | noisy 1..F-1].

    Every block attends exactly as the streaming student does: its clean frames to themselves,
    the reference sink and the clean frames of the last `window_blocks` blocks (what a commit at
    t = 0 sees), its noisy frames to themselves and the same clean context (a denoising step),
    at the re-indexed positions of kv_cache.stream_frame_positions. So the warm-up trains the
    context serving gives, beyond the window too.
    """
    k, n = block_frames, tokens_per_frame
    if (num_frames - 1) % k:
        raise ValueError(f"{num_frames} latent frames are not the reference + whole blocks of {k}")

    def frames(block: int) -> list[int]:
        return [0] if block == 0 else list(range(1 + (block - 1) * k, 1 + block * k))

    def tokens(sequence_frames: list[int]) -> torch.Tensor:
        return (torch.tensor(sequence_frames)[:, None] * n + torch.arange(n)).flatten()

    def group(sequence_frames: list[int], context: list[int], key_positions: torch.Tensor) -> AttentionGroup:
        queries = slice(sequence_frames[0] * n, (sequence_frames[-1] + 1) * n)
        return AttentionGroup(queries, tokens(sequence_frames + context), key_positions)

    positions = torch.empty(2 * num_frames - 1, dtype=torch.long)
    clean_groups, noisy_groups = [], []
    for block in range(1 + (num_frames - 1) // k):
        own = frames(block)
        if block == 0:
            current, keys = stream_frame_positions(0, k, 1, has_sink=False)
            context = []
        else:
            seen = window_blocks_seen(block, window_blocks)
            current, keys = stream_frame_positions(len(seen), k, k)
            context = [0] + [f for earlier in seen for f in frames(earlier)]
        positions[own] = current
        clean_groups.append(group(own, context, keys))
        if block:
            noisy = [num_frames + f - 1 for f in own]
            positions[noisy] = current
            noisy_groups.append(group(noisy, context, keys))
    return positions, clean_groups + noisy_groups


def causal_flow_matching_loss(model, latents, control, sigma, noise, block_frames: int, window_blocks: int) -> torch.Tensor:
    """Warm-up objective: MSE on the velocity of each noisy block given its clean context (Eq. 4)."""
    b, _, f, h, w = latents.shape
    _, p_h, p_w = model.config.patch_size
    s = sigma.view(-1, 1, 1, 1, 1).to(latents.dtype)
    noisy = fm.add_noise(latents[:, :, 1:], noise[:, :, 1:], s)
    x = torch.cat([latents, noisy], dim=2)
    timesteps = torch.cat([torch.zeros(b, f, device=latents.device),
                           (sigma * fm.NUM_TRAIN_TIMESTEPS)[:, None].expand(b, f - 1).float()], dim=1)
    both_control = None if control is None else torch.cat([control, control[:, :, 1:]], dim=2)
    positions, groups = teacher_forcing_layout(f, (h // p_h) * (w // p_w), block_frames, window_blocks)
    velocity = model(x, timesteps, control=both_control, frame_positions=positions, attention_groups=groups)
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
