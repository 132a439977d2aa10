"""The world-model DiT: diffusers' Wan2.2-TI2V transformer plus the action-control branch.

Subclassing WanTransformer3DModel keeps every Wan parameter under its diffusers name, so a
Wan2.2-TI2V-5B checkpoint loads unchanged and, with the control branch silent, the bidirectional
output equals diffusers' own forward. What is added:
- control_patch_embedding (zero-initialised) + control_scale (alpha, init 0.1) + ControlAlignment
  statistics: x = PatchEmbed_z(z_t) + alpha * PatchEmbed_c(c~)  (paper Eq. 3). No forward pass
  updates the statistics: a training step on clean data calls control_stats.observe itself
  (training.losses.observe_control_statistics), so rollouts and critics never feed them noise;
- per-latent-frame timesteps, so the reference frame (frame 0) is denoised at t = 0 while the
  rest are noisy (Wan2.2 TI2V's expand_timesteps, evaluated per frame instead of per token);
- null_text_embedding: a learned embedding used when no precomputed text embedding is given,
  so the teleop loop never runs a text encoder;
- explicit attention masks and frame positions, attention groups (the teacher-forced warm-up
  attends exactly as streaming does: sink + window at re-indexed positions, see
  training.causal), and a cached streaming step for the causal student (kv_cache.RollingKVCache);
- each block is a RynnWorldBlock (the same parameters) whose forward is the world model's block
  step, so every use of a block's weights enters through the block's own call, where per-block
  hooks (FSDP's gather of a shard, see training.sharding) see it.
"""

import functools
from typing import NamedTuple

import torch
import torch.utils.checkpoint
from diffusers import WanTransformer3DModel
from diffusers.configuration_utils import register_to_config
from diffusers.models.transformers.transformer_wan import WanTransformerBlock
from torch import nn

from .attention import attend, cross_attention, project_context, project_self_attention
from .control import ControlAlignment
from .kv_cache import RollingKVCache
from .rope import FramePositionRope, apply_rope


class AttentionGroup(NamedTuple):
    """Queries `queries` (a token slice) attend to the tokens `keys`, whose keys are rotated at
    `key_frame_positions` (one per key frame, tokens laid out frame-major). A forward's groups
    cover its query tokens in order."""

    queries: slice
    keys: torch.Tensor
    key_frame_positions: torch.Tensor


class RynnWorldBlock(WanTransformerBlock):
    """A Wan block run the world model's way: per-frame modulation in float32 (as Wan computes it),
    the text's keys and values projected once per stream (project_context), and self-attention left
    to the caller (full, grouped or against a KV cache)."""

    ENTRY_METHODS = ("project_context",)  # use the block's weights from outside forward (training.sharding)

    def project_context(self, context: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return project_context(self.attn2, context)

    def forward(self, x: torch.Tensor, modulation: torch.Tensor, context_kv: tuple[torch.Tensor, torch.Tensor],
                rope, frames: int, self_attention) -> torch.Tensor:
        """x (B, N, D) tokens of `frames` frames; modulation (B, F, 1, 6, D) float32; self_attention(q, k, v)."""
        b, n, d = x.shape
        hw = n // frames

        def modulate(norm, h, shift, scale):
            y = norm(h.float()).view(b, frames, hw, d) * (1 + scale) + shift
            return y.view(b, n, d).type_as(h)

        def gated(h, update, gate):
            return (h.float() + (update.float().view(b, frames, hw, d) * gate).view(b, n, d)).type_as(h)

        shift, scale, gate, c_shift, c_scale, c_gate = (self.scale_shift_table.view(1, 1, 1, 6, d) + modulation).unbind(3)
        q, k, v = project_self_attention(self.attn1, modulate(self.norm1, x, shift, scale), rope)
        x = gated(x, self.attn1.to_out[0](self_attention(q, k, v)), gate)
        x = x + cross_attention(self.attn2, self.norm2(x.float()).type_as(x), context_kv)
        return gated(x, self.ffn(modulate(self.norm3, x, c_shift, c_scale)), c_gate)


class RynnWorldTransformer(WanTransformer3DModel):
    _no_split_modules = ["RynnWorldBlock"]
    ENTRY_METHODS = ("forward_cached", "embed_text")  # use the root's weights from outside forward (training.sharding)

    @register_to_config
    def __init__(
        self,
        patch_size: tuple[int, ...] = (1, 2, 2),
        num_attention_heads: int = 24,
        attention_head_dim: int = 128,
        in_channels: int = 48,
        out_channels: int = 48,
        text_dim: int = 4096,
        freq_dim: int = 256,
        ffn_dim: int = 14336,
        num_layers: int = 30,
        cross_attn_norm: bool = True,
        qk_norm: str | None = "rms_norm_across_heads",
        eps: float = 1e-6,
        image_dim: int | None = None,
        added_kv_proj_dim: int | None = None,
        rope_max_seq_len: int = 1024,
        pos_embed_seq_len: int | None = None,
        null_text_tokens: int = 512,
        control_scale_init: float = 0.1,
        control_stats_momentum: float = 0.01,
    ):
        if image_dim is not None or added_kv_proj_dim is not None:
            raise ValueError("the world model is Wan2.2 TI2V-style: no CLIP image branch (image_dim, added_kv_proj_dim)")
        super().__init__(
            patch_size=patch_size,
            num_attention_heads=num_attention_heads,
            attention_head_dim=attention_head_dim,
            in_channels=in_channels,
            out_channels=out_channels,
            text_dim=text_dim,
            freq_dim=freq_dim,
            ffn_dim=ffn_dim,
            num_layers=num_layers,
            cross_attn_norm=cross_attn_norm,
            qk_norm=qk_norm,
            eps=eps,
            rope_max_seq_len=rope_max_seq_len,
            pos_embed_seq_len=pos_embed_seq_len,
        )
        for block in self.blocks:  # diffusers builds WanTransformerBlocks: same parameters, the world model's forward
            block.__class__ = RynnWorldBlock
        inner_dim = num_attention_heads * attention_head_dim
        self.control_patch_embedding = nn.Conv3d(in_channels, inner_dim, kernel_size=patch_size, stride=patch_size)
        nn.init.zeros_(self.control_patch_embedding.weight)
        nn.init.zeros_(self.control_patch_embedding.bias)
        self.control_scale = nn.Parameter(torch.tensor(float(control_scale_init)))
        self.control_stats = ControlAlignment(in_channels, momentum=control_stats_momentum)
        self.null_text_embedding = nn.Parameter(torch.zeros(null_text_tokens, text_dim))

    # ---- embeddings -------------------------------------------------------------------------

    def patch_grid(self, latents: torch.Tensor) -> tuple[int, int, int]:
        _, _, f, h, w = latents.shape
        p_t, p_h, p_w = self.config.patch_size
        if f % p_t or h % p_h or w % p_w:
            raise ValueError(f"latent size {(f, h, w)} is not divisible by the patch size {(p_t, p_h, p_w)}")
        return f // p_t, h // p_h, w // p_w

    def embed_video(self, latents: torch.Tensor, control: torch.Tensor | None) -> torch.Tensor:
        """Patch tokens (B, N, D) of the noisy latents plus the gated, aligned control."""
        x = self.patch_embedding(latents)
        if control is not None:
            if control.shape != latents.shape:
                raise ValueError(f"control latent {tuple(control.shape)} must match video latent {tuple(latents.shape)}")
            x = x + self.control_scale * self.control_patch_embedding(self.control_stats(control))
        return x.flatten(2).transpose(1, 2).contiguous()

    def embed_text(self, text_embeds: torch.Tensor | None, batch_size: int, dtype) -> torch.Tensor:
        if text_embeds is None:
            text_embeds = self.null_text_embedding.unsqueeze(0).expand(batch_size, -1, -1)
        return self.condition_embedder.text_embedder(text_embeds.to(dtype))

    def context_kv(self, context: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [block.project_context(context) for block in self.blocks]

    def embed_timesteps(self, frame_timesteps: torch.Tensor, dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, F) timesteps -> temb (B, F, D) and block modulation (B, F, 6, D), as Wan computes them."""
        emb = self.condition_embedder
        b, f = frame_timesteps.shape
        t = emb.timesteps_proj(frame_timesteps.flatten())
        embedder_dtype = next(iter(emb.time_embedder.parameters())).dtype
        if t.dtype != embedder_dtype and embedder_dtype != torch.int8:
            t = t.to(embedder_dtype)
        temb = emb.time_embedder(t).type_as(torch.empty(0, dtype=dtype))
        modulation = emb.time_proj(emb.act_fn(temb))
        return temb.view(b, f, -1), modulation.view(b, f, 6, -1)

    def frame_timesteps(self, timestep: torch.Tensor | float, batch_size: int, num_frames: int, device) -> torch.Tensor:
        """Accept a scalar, (B,) or per-frame (B, F) timesteps; return (B, F) float."""
        t = torch.as_tensor(timestep, dtype=torch.float32, device=device)
        if t.ndim == 0:
            t = t.expand(batch_size)
        if t.ndim == 1:
            t = t[:, None].expand(batch_size, num_frames)
        if t.shape != (batch_size, num_frames):
            raise ValueError(f"timestep must be scalar, ({batch_size},) or ({batch_size}, {num_frames}), got {tuple(t.shape)}")
        return t

    # ---- transformer body -------------------------------------------------------------------

    def _run_blocks(self, x, modulation, context_kv, rope, frames, self_attention):
        """The blocks in order; `self_attention(layer, q, k, v)` does the attending."""
        mod = modulation.float().unsqueeze(2)  # (B, F, 1, 6, D): Wan's float32 modulation
        # enable_gradient_checkpointing(): recompute each block in backward instead of storing it
        recompute = self.gradient_checkpointing and torch.is_grad_enabled()
        for layer, block in enumerate(self.blocks):
            attention = functools.partial(self_attention, layer)
            if recompute:
                x = torch.utils.checkpoint.checkpoint(block, x, mod, context_kv[layer], rope, frames, attention,
                                                      use_reentrant=False)
            else:
                x = block(x, mod, context_kv[layer], rope, frames, attention)
        return x

    def _output(self, x, temb, grid, batch_size):
        f, h, w = grid
        d = x.shape[-1]
        shift, scale = (self.scale_shift_table.view(1, 1, 2, d) + temb.unsqueeze(2)).unbind(2)
        y = self.norm_out(x.float()).view(batch_size, f, h * w, d) * (1 + scale.unsqueeze(2)) + shift.unsqueeze(2)
        y = self.proj_out(y.view(batch_size, f * h * w, d).type_as(x))
        p_t, p_h, p_w = self.config.patch_size
        y = y.reshape(batch_size, f, h, w, p_t, p_h, p_w, -1).permute(0, 7, 1, 4, 2, 5, 3, 6)
        return y.flatten(6, 7).flatten(4, 5).flatten(2, 3)

    def rope_table(self, grid_h: int, grid_w: int, device) -> FramePositionRope:
        return FramePositionRope(self.rope, grid_h, grid_w, device=device)

    # ---- entry points -----------------------------------------------------------------------

    def forward(
        self,
        latents: torch.Tensor,
        timestep,
        control: torch.Tensor | None = None,
        text_embeds: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        frame_positions: torch.Tensor | None = None,
        attention_groups: list[AttentionGroup] | None = None,
    ) -> torch.Tensor:
        """Velocity for (B, C, F, H, W) latents.

        timestep: scalar, (B,) or per-latent-frame (B, F) in [0, 1000] (frame 0 = reference at 0).
        control: optional (B, C, F, H, W) skeleton latent; None skips the control branch.
        attention_mask: optional boolean (N, N) token mask (see attention.block_causal_mask).
        frame_positions: optional (F,) RoPE frame positions; default 0..F-1.
        attention_groups: instead of one (masked) attention over the sequence, each group's queries
            attend to their own keys at their own positions (frame_positions then place the queries).
        """
        if attention_mask is not None and attention_groups is not None:
            raise ValueError("pass attention_mask or attention_groups, not both")
        b = latents.shape[0]
        grid = self.patch_grid(latents)
        x = self.embed_video(latents, control)
        temb, modulation = self.embed_timesteps(self.frame_timesteps(timestep, b, grid[0], latents.device), x.dtype)
        context_kv = self.context_kv(self.embed_text(text_embeds, b, x.dtype))
        positions = torch.arange(grid[0]) if frame_positions is None else frame_positions.cpu()
        table = self.rope_table(grid[1], grid[2], latents.device)
        rope = table(positions)

        def full_attention(layer, q, k, v):
            return attend(q, apply_rope(k, *rope), v, attention_mask)

        if attention_groups is not None:
            stops = [g.queries.stop for g in attention_groups]
            if [g.queries.start for g in attention_groups] != [0] + stops[:-1] or stops[-1] != x.shape[1]:
                raise ValueError(f"attention groups must cover the {x.shape[1]} query tokens in order")
            groups = [(g.queries, g.keys.to(latents.device), table(g.key_frame_positions)) for g in attention_groups]

            def grouped_attention(layer, q, k, v):
                return torch.cat([attend(q[:, rows], apply_rope(k[:, keys], *key_rope), v[:, keys])
                                  for rows, keys, key_rope in groups], dim=1)

        x = self._run_blocks(x, modulation, context_kv, rope, grid[0],
                             full_attention if attention_groups is None else grouped_attention)
        return self._output(x, temb, grid, b)

    def forward_cached(
        self,
        latents: torch.Tensor,
        timestep,
        cache: RollingKVCache,
        context_kv: list[tuple[torch.Tensor, torch.Tensor]],
        rope_table: FramePositionRope,
        control: torch.Tensor | None = None,
        commit: bool = False,
    ) -> torch.Tensor:
        """One causal-student step for the newest block, attending to the cache (see RollingKVCache).

        commit=True keeps this block's keys/values in the cache (the reference becomes the sink).
        """
        b = latents.shape[0]
        grid = self.patch_grid(latents)
        x = self.embed_video(latents, control)
        temb, modulation = self.embed_timesteps(self.frame_timesteps(timestep, b, grid[0], latents.device), x.dtype)
        query_rope = rope_table(cache.current_positions(grid[0]))
        key_rope = rope_table(cache.key_frame_positions(grid[0]))
        length = cache.attended_tokens(x.shape[1])

        def cached_attention(layer, q, k, v):
            cache.write_current(layer, k, v)
            keys, values = cache.prefix(layer, length)
            return attend(q, apply_rope(keys, *key_rope), values)

        x = self._run_blocks(x, modulation, context_kv, query_rope, grid[0], cached_attention)
        if commit:
            cache.commit()
        return self._output(x, temb, grid, b)

    def new_cache(self, batch_size: int, tokens_per_frame: int, block_frames: int, window_blocks: int) -> RollingKVCache:
        param = self.patch_embedding.weight
        return RollingKVCache(
            num_layers=len(self.blocks),
            batch_size=batch_size,
            heads=self.config.num_attention_heads,
            head_dim=self.config.attention_head_dim,
            tokens_per_frame=tokens_per_frame,
            block_frames=block_frames,
            window_blocks=window_blocks,
            device=param.device,
            dtype=param.dtype,
        )
