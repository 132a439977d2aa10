"""Stage 1 (egocentric human video) / stage 2 (robot episodes) training of the bidirectional DiT
with the conditional flow-matching loss.

    python -m rynn_world.training.train --config config/train_stage2_cpu.yaml [key.sub=value ...]
    accelerate launch --config_file config/accelerate_ddp.yaml -m rynn_world.training.train --config ...

Writes <run.output_dir>/{checkpoints/, tensorboard/, loss_curve.png, final/{transformer,vae}}; a
re-run resumes from the newest checkpoint.
"""

from pathlib import Path

import torch

from ..model.configs import get_config
from .config import TrainConfig, run_from_command_line
from .datasets import build_latent_dataset, sample_batch
from .ema import EMA
from .export import load_or_build_transformer, load_vae, save_world_model
from .lora import add_lora, export_transformer, trainable_named_parameters
from .losses import flow_matching_loss, sample_sigmas
from .loop import TrainingLoop, adamw, make_accelerator, step_generator, lr_schedule


def build_trainable(cfg: TrainConfig, device):
    transformer = load_or_build_transformer(get_config(cfg.model), cfg.init_checkpoint, cfg.allow_missing_control, device)
    if cfg.run.gradient_checkpointing:
        transformer.enable_gradient_checkpointing()
    transformer.train()
    if cfg.finetune == "lora":
        return add_lora(transformer, cfg.lora_rank, train_patch_embedding=cfg.stage == 1), None
    if cfg.finetune != "full":
        raise ValueError(f"finetune must be 'lora' or 'full', got {cfg.finetune!r}")
    transformer.requires_grad_(True)
    return transformer, EMA(transformer.named_parameters(), cfg.ema_decay)


def train(cfg: TrainConfig, resume: str | None = "latest") -> Path:
    accelerator = make_accelerator(cfg.run)
    model_config = get_config(cfg.model)
    device = accelerator.device
    vae = load_vae(model_config, cfg.vae_checkpoint or cfg.init_checkpoint, device=device)
    with accelerator.main_process_first():
        dataset = build_latent_dataset(cfg.data, model_config, vae, Path(cfg.run.output_dir))
    torch.manual_seed(cfg.run.seed)
    model, ema = build_trainable(cfg, device)
    optimizer = adamw(model.parameters(), cfg.optim)
    scheduler = lr_schedule(optimizer, cfg.optim, cfg.run.steps)
    model, optimizer = accelerator.prepare(model, optimizer)
    emas = {"model": ema} if ema is not None else {}
    loop = TrainingLoop(cfg.run, accelerator, {"model": model}, {"model": optimizer}, {"model": scheduler}, emas,
                        name=f"stage{cfg.stage}")
    if resume:
        loop.resume(resume)

    def step_fn(step: int) -> dict[str, float]:
        generator = step_generator(cfg.run.seed, step, accelerator.process_index, "cpu")
        batch = sample_batch(dataset, cfg.run.batch_size, generator, device)
        latents, control = batch["latents"], batch["control"]
        sigma = sample_sigmas(latents.shape[0], model_config.shift, generator, device)
        noise = torch.randn(latents.shape, generator=generator).to(device)
        with accelerator.autocast():
            loss = flow_matching_loss(model, latents, control, sigma, noise)
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), cfg.optim.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        if ema is not None:
            ema.update(trainable_named_parameters(accelerator.unwrap_model(model)))
        return {f"stage{cfg.stage}/flow_matching": loss.item()}

    loop.run(cfg.run.steps, step_fn)
    final = Path(cfg.run.output_dir) / "final"
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        trained = accelerator.unwrap_model(model)
        if ema is not None:
            ema.copy_to(trained)
        save_world_model(final, export_transformer(trained).float(), vae)
    return final


def main(argv: list[str] | None = None) -> None:
    run_from_command_line(TrainConfig, train, "world model", __doc__.splitlines()[0], argv)

if __name__ == "__main__":
    main()
