"""Video generation for evaluation: each method turns (reference latent, control latents) into
RGB frames through the same VAE decoder, so the metrics compare the generators only."""

import numpy as np
import torch

from .. import flow_matching as fm
from ..model.causal import CausalStudentSampler
from ..model.configs import WorldModelConfig
from ..model.teacher import generate_bidirectional
from ..model.vae import StreamingVAEDecoder, tensor_to_rgb


def decode(vae, latents: torch.Tensor) -> np.ndarray:
    """(1, C, F, h, w) latents -> (1 + 4 (F - 1), H, W, 3) uint8, as the streaming decoder emits them."""
    return tensor_to_rgb(StreamingVAEDecoder(vae).push(latents))


@torch.no_grad()
def teacher_latents(transformer, reference: torch.Tensor, control: torch.Tensor, steps: int, shift: float,
                    seed: int) -> torch.Tensor:
    generator = torch.Generator(reference.device).manual_seed(seed)
    return generate_bidirectional(transformer, reference, control, control.shape[2], num_steps=steps, shift=shift,
                                  sampler="euler", generator=generator)


@torch.no_grad()
def student_latents(transformer, config: WorldModelConfig, reference: torch.Tensor, control: torch.Tensor,
                    seed: int) -> torch.Tensor:
    """Block by block through the fixed-size KV cache, exactly as StreamingWorldModel runs it."""
    generator = torch.Generator(reference.device).manual_seed(seed)
    sampler = CausalStudentSampler(transformer, config.latent_size, block_frames=config.block_frames,
                                   window_blocks=config.window_blocks,
                                   sigmas=fm.student_sigmas(config.denoising_list, config.shift), generator=generator)
    sampler.start(reference, control[:, :, :1])
    k = config.block_frames
    blocks = [reference] + [sampler.next_block(control[:, :, i: i + k]) for i in range(1, control.shape[2], k)]
    return torch.cat(blocks, dim=2)
