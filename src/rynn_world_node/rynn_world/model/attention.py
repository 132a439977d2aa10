"""Attention for the world-model DiT: Wan's projections, explicit masks, SDPA.

The Wan block's own processor always attends bidirectionally; the student needs block-causal
masks and a KV cache, so the projections are applied here and attention goes straight to
F.scaled_dot_product_attention (flash / memory-efficient kernels where the device has them).
"""

import torch
import torch.nn.functional as F

from .rope import apply_rope


def project_self_attention(attn, hidden: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]):
    """Wan self-attention projections -> q (rotated), k_unrotated, v, each (B, N, heads, head_dim).

    Keys are returned before rotation so a cache can re-rotate them at new positions.
    """
    q = attn.norm_q(attn.to_q(hidden)).unflatten(2, (attn.heads, -1))
    k = attn.norm_k(attn.to_k(hidden)).unflatten(2, (attn.heads, -1))
    v = attn.to_v(hidden).unflatten(2, (attn.heads, -1))
    return apply_rope(q, *rope), k, v


def project_context(attn, context: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-attention keys/values of the (static) text context; computed once per stream."""
    k = attn.norm_k(attn.to_k(context)).unflatten(2, (attn.heads, -1))
    v = attn.to_v(context).unflatten(2, (attn.heads, -1))
    return k, v


def attend(q, k, v, mask: torch.Tensor | None = None) -> torch.Tensor:
    """SDPA on (B, N, heads, d) tensors; returns (B, N, heads * d)."""
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask)
    return out.transpose(1, 2).flatten(2).type_as(q)


def cross_attention(attn, hidden: torch.Tensor, context_kv: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    q = attn.norm_q(attn.to_q(hidden)).unflatten(2, (attn.heads, -1))
    return attn.to_out[0](attend(q, *context_kv))


def frame_block_ids(num_frames: int, block_frames: int, device=None) -> torch.Tensor:
    """Block index per latent frame: the reference frame is block 0, then blocks of k frames."""
    frames = torch.arange(num_frames, device=device)
    return torch.where(frames == 0, 0, 1 + (frames - 1) // block_frames)


def block_causal_mask(num_frames: int, tokens_per_frame: int, block_frames: int = 1, device=None) -> torch.Tensor:
    """Boolean (N, N) mask, True = may attend: a block sees the reference block, itself and every
    earlier block, at the absolute positions of a full-sequence forward.

    That is the streaming student's context only while the stream fits in its window; the
    windowed context at re-indexed positions has one rule, kv_cache.stream_frame_positions with
    window_blocks_seen, used by both caches and by training.causal.teacher_forcing_layout.
    """
    blocks = frame_block_ids(num_frames, block_frames, device).repeat_interleave(tokens_per_frame)
    return blocks[None, :] <= blocks[:, None]
