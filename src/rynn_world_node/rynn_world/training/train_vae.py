"""Train the video VAE of a small config on RGB clips and skeleton renders.

The released Wan2.2 VAE is used as-is for the full model; the CPU configs have no pretrained VAE,
so one is trained here (L1 reconstruction + a small KL term on random crops). At the end the
per-channel latent mean/std are measured on the data and written into the VAE config, which puts
the DiT's latents at unit scale, as Wan's latents_mean/latents_std do.

    python -m rynn_world.training.train_vae --config src/rynn_world_node/config/train_vae_cpu.yaml
"""

from pathlib import Path

import numpy as np
import torch
from diffusers import AutoencoderKLWan

from ..data.latent_cache import control_video
from ..model.configs import get_config
from ..model.vae import StreamingVAEEncoder, rgb_to_tensor
from .config import VAETrainConfig, run_from_command_line
from .datasets import build_clip_dataset
from .distributed import check_launch
from .export import load_vae, save_world_model
from .loop import TrainingLoop, adamw, average_gradients, lr_schedule, make_accelerator, step_generator


def random_crop(video: torch.Tensor, crop: tuple[int, int] | None, generator: torch.Generator) -> torch.Tensor:
    if crop is None:
        return video
    h, w = video.shape[-2:]
    top = int(torch.randint(h - crop[0] + 1, (1,), generator=generator))
    left = int(torch.randint(w - crop[1] + 1, (1,), generator=generator))
    return video[..., top: top + crop[0], left: left + crop[1]]


def vae_loss(vae: AutoencoderKLWan, video: torch.Tensor, kl_weight: float, generator: torch.Generator,
             sample_posterior: bool = True, encoder_grad: bool = True) -> tuple[torch.Tensor, dict]:
    with torch.set_grad_enabled(encoder_grad and torch.is_grad_enabled()):
        posterior = vae.encode(video).latent_dist
    latents = posterior.mean
    if sample_posterior:
        noise = torch.randn(posterior.mean.shape, generator=generator, device=video.device, dtype=video.dtype)
        latents = latents + posterior.std * noise
    reconstruction = vae.decode(latents).sample
    l1 = (reconstruction - video).abs().mean()
    kl = posterior.kl().mean() / posterior.mean[0].numel()
    return l1 + kl_weight * kl, {"l1": float(l1), "kl": float(kl)}


@torch.no_grad()
def with_latent_statistics(vae: AutoencoderKLWan, clips, max_clips: int = 64) -> AutoencoderKLWan:
    """A copy of `vae` whose config carries the data's per-channel latent mean and std."""
    encoder = StreamingVAEEncoder(vae)
    latents = []
    for i in np.linspace(0, len(clips) - 1, min(max_clips, len(clips))).astype(int):
        clip = clips[int(i)]
        for video in (clip.frames, control_video(clip.skeleton)):
            encoder.reset()
            latents.append(encoder.push(rgb_to_tensor(video, vae.device, vae.dtype)).float())
    raw = torch.cat([z.transpose(0, 1).flatten(1) for z in latents], dim=1)  # (C, N) in the current normalisation
    mean = torch.tensor(vae.config.latents_mean).view(-1, 1)
    std = torch.tensor(vae.config.latents_std).view(-1, 1)
    raw = raw.cpu() * std + mean
    config = {k: v for k, v in vae.config.items() if not k.startswith("_")}
    config.update(latents_mean=raw.mean(1).tolist(), latents_std=raw.std(1).clamp_min(1e-3).tolist())
    normalised = AutoencoderKLWan(**config).to(device=vae.device, dtype=vae.dtype)
    normalised.load_state_dict(vae.state_dict())
    return normalised.eval()


def train_vae(cfg: VAETrainConfig, resume: str | None = "latest") -> Path:
    accelerator = make_accelerator(cfg.run)
    model_config = get_config(cfg.model)
    check_launch(accelerator, model_config, "train_vae", cfg.run.mixed_precision)  # FSDP is refused here, not at step 1
    clips = build_clip_dataset(cfg.data, model_config, clip_frames=cfg.clip_frames)
    torch.manual_seed(cfg.run.seed)
    vae = load_vae(model_config, cfg.init_checkpoint).train()
    if cfg.frozen_encoder:
        if cfg.init_checkpoint is None:
            raise ValueError("frozen_encoder needs init_checkpoint (a trained encoder to keep)")
        frozen_encoder_parts(vae).requires_grad_(False)
    optimizer = adamw([p for p in vae.parameters() if p.requires_grad], cfg.optim)
    scheduler = lr_schedule(optimizer, cfg.optim, cfg.run.steps)
    vae = vae.to(accelerator.device)
    optimizer = accelerator.prepare(optimizer)
    loop = TrainingLoop(cfg.run, accelerator, {"vae": vae}, {"vae": optimizer}, {"vae": scheduler}, name="vae")
    if resume:
        loop.resume(resume)
    device = accelerator.device

    def step_fn(step: int) -> dict[str, float]:
        generator = step_generator(cfg.run.seed, step, accelerator.process_index, "cpu")
        videos = []
        for _ in range(cfg.run.batch_size):
            clip = clips[int(torch.randint(len(clips), (1,), generator=generator))]
            skeleton = float(torch.rand(1, generator=generator)) < cfg.skeleton_fraction
            pixels = clip.skeleton if skeleton else clip.frames
            videos.append(random_crop(rgb_to_tensor(pixels), cfg.crop, generator))
        video = torch.cat(videos).to(device)
        with accelerator.autocast():
            loss, parts = vae_loss(vae, video, cfg.kl_weight, generator, cfg.sample_posterior,
                                   encoder_grad=not cfg.frozen_encoder)
        accelerator.backward(loss)
        average_gradients(vae, accelerator)
        accelerator.clip_grad_norm_(vae.parameters(), cfg.optim.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        return {"vae/loss": loss.item(), "vae/l1": parts["l1"]}

    loop.run(cfg.run.steps, step_fn)
    final = Path(cfg.run.output_dir) / "final"
    if accelerator.is_main_process:
        trained = vae.eval() if cfg.frozen_encoder else with_latent_statistics(vae.eval(), clips)
        save_world_model(final, vae=trained)
    return final


def frozen_encoder_parts(vae: AutoencoderKLWan) -> torch.nn.ModuleList:
    """What maps pixels to latents (encoder, quant_conv): fixed when only the decoder is fine-tuned."""
    return torch.nn.ModuleList([vae.encoder, vae.quant_conv])


def main(argv: list[str] | None = None) -> None:
    run_from_command_line(VAETrainConfig, train_vae, "VAE", __doc__.splitlines()[0], argv)

if __name__ == "__main__":
    main()
