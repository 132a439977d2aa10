"""Causal student inference: the reference as sink, then one block of latent frames at a time.

Each block is denoised with the few-step student schedule against the KV cache, then re-run once
clean at t = 0 to commit its keys/values (the context the next block sees is a clean frame, as in
block-causal teacher forcing).
"""

import torch

from .. import flow_matching as fm
from .transformer import RynnWorldTransformer


class CausalStudentSampler:
    def __init__(
        self,
        transformer: RynnWorldTransformer,
        latent_hw: tuple[int, int],
        block_frames: int = 1,
        window_blocks: int = 4,
        sigmas: list[float] | None = None,
        batch_size: int = 1,
        generator: torch.Generator | None = None,
        renoise: bool = True,
    ):
        self.model = transformer
        p_t, p_h, p_w = transformer.config.patch_size
        if p_t != 1:
            raise ValueError("causal streaming needs a temporal patch size of 1")
        self.latent_hw = latent_hw
        self.block_frames = block_frames
        self.sigmas = fm.student_sigmas() if sigmas is None else list(sigmas)
        self.generator = generator
        self.renoise = renoise
        grid_h, grid_w = latent_hw[0] // p_h, latent_hw[1] // p_w
        self.cache = transformer.new_cache(batch_size, grid_h * grid_w, block_frames, window_blocks)
        self.rope = transformer.rope_table(grid_h, grid_w, self.cache.storage.device)
        self._context_kv = None

    @torch.no_grad()
    def start(self, reference_latent: torch.Tensor, reference_control: torch.Tensor | None, text_embeds=None) -> None:
        """Anchor a new stream on a (B, C, 1, h, w) reference latent; it becomes the cache sink."""
        self.cache.reset()
        context = self.model.embed_text(text_embeds, reference_latent.shape[0], reference_latent.dtype)
        self._context_kv = self.model.context_kv(context)
        self.model.forward_cached(reference_latent, 0.0, self.cache, self._context_kv, self.rope,
                                  control=reference_control, commit=True)

    @torch.no_grad()
    def next_block(self, control: torch.Tensor | None) -> torch.Tensor:
        """Generate the next (B, C, k, h, w) clean latent block for the given control block."""
        if self._context_kv is None:
            raise RuntimeError("start() the sampler with a reference latent before generating")
        b = self.cache.storage.shape[2]
        shape = (b, self.model.config.in_channels, self.block_frames, *self.latent_hw)
        param = self.model.patch_embedding.weight
        noise = torch.randn(shape, generator=self.generator, device=param.device, dtype=param.dtype)

        def velocity(x, timestep):
            return self.model.forward_cached(x, timestep, self.cache, self._context_kv, self.rope, control=control)

        clean = fm.few_step_sample(velocity, noise, self.sigmas, generator=self.generator, renoise=self.renoise)
        self.model.forward_cached(clean, 0.0, self.cache, self._context_kv, self.rope, control=control, commit=True)
        return clean
