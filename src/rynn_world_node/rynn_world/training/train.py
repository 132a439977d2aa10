"""Stage 1 (egocentric human video) / stage 2 (robot episodes) training of the bidirectional DiT
with the conditional flow-matching loss, and the TI2V stage before them (stage: ti2v, paper Sec.
5.1): text + image to video without the action, the control branch frozen and never run; the text
is each task's prompt embedding (prompt_embeddings) or the null text embedding.

    python -m rynn_world.training.train --config src/rynn_world_node/config/train_stage2_cpu.yaml [key.sub=value ...]
    accelerate launch --config_file src/rynn_world_node/config/accelerate_ddp.yaml -m rynn_world.training.train --config ...

Writes <run.output_dir>/{checkpoints/, tensorboard/, loss_curve.png, final/{transformer,vae}}; a
re-run resumes from the newest checkpoint.
"""

from pathlib import Path

import torch

from ..model.configs import get_config
from .config import TrainConfig, run_from_command_line
from .datasets import build_latent_dataset, check_prompts_cover_tasks, sample_batch
from .distributed import check_launch
from .ema import EMA
from .export import load_or_build_transformer, load_vae, read_prompt_embeddings, save_world_model
from .loop import TrainingLoop, adamw, lr_schedule, make_accelerator, step_generator
from .lora import CONTROL_BRANCH, add_lora, export_transformer, trainable_named_parameters
from .losses import flow_matching_loss, observe_control_statistics, sample_sigmas

STAGES = (1, 2, "ti2v")


def uses_action(cfg: TrainConfig) -> bool:
    """Stages 1 and 2 condition on the skeleton; the TI2V stage does not."""
    if cfg.stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {cfg.stage!r}")
    if cfg.prompt_embeddings is not None and cfg.stage != "ti2v":
        raise ValueError("prompt_embeddings is for the TI2V stage only: the teleop loop runs with the null text "
                         "embedding, so the action-conditioned stages train with it too")
    return cfg.stage != "ti2v"


def task_prompts(cfg: TrainConfig, dataset) -> dict[str, torch.Tensor] | None:
    """The TI2V stage's prompt embedding per task, or None (every clip uses the null text)."""
    if cfg.prompt_embeddings is None:
        return None
    model_config = get_config(cfg.model)
    prompts = read_prompt_embeddings(cfg.prompt_embeddings, model_config.null_text_tokens,
                                     model_config.transformer["text_dim"])
    check_prompts_cover_tasks(dataset, prompts, cfg.prompt_embeddings)
    return prompts


def stage_name(cfg: TrainConfig) -> str:
    return "ti2v" if cfg.stage == "ti2v" else f"stage{cfg.stage}"


def build_trainable(cfg: TrainConfig, device):
    action = uses_action(cfg)
    transformer = load_or_build_transformer(get_config(cfg.model), cfg.init_checkpoint, cfg.allow_missing_control, device)
    if cfg.run.gradient_checkpointing:
        transformer.enable_gradient_checkpointing()
    transformer.train()
    if cfg.finetune == "lora":
        return add_lora(transformer, cfg.lora_rank, train_patch_embedding=cfg.stage == 1, train_control_branch=action), None
    if cfg.finetune != "full":
        raise ValueError(f"finetune must be 'lora' or 'full', got {cfg.finetune!r}")
    for name, param in transformer.named_parameters():
        param.requires_grad_(action or not name.startswith(CONTROL_BRANCH))
    return transformer, EMA(transformer.named_parameters(), cfg.ema_decay)


def train(cfg: TrainConfig, resume: str | None = "latest") -> Path:
    action = uses_action(cfg)
    accelerator = make_accelerator(cfg.run)
    model_config = get_config(cfg.model)
    check_launch(accelerator, model_config, "train", cfg.run.mixed_precision)  # a bad FSDP launch fails here, not at prepare
    device = accelerator.device
    torch.manual_seed(cfg.run.seed)  # a VAE built fresh (no checkpoint) is then the same in a run and in its resume
    vae = load_vae(model_config, cfg.vae_checkpoint or cfg.init_checkpoint, device=device)
    with accelerator.main_process_first():
        dataset = build_latent_dataset(cfg.data, model_config, vae, Path(cfg.run.output_dir))
    prompts = task_prompts(cfg, dataset)
    torch.manual_seed(cfg.run.seed)
    model, ema = build_trainable(cfg, device)
    optimizer = adamw(model.parameters(), cfg.optim)
    scheduler = lr_schedule(optimizer, cfg.optim, cfg.run.steps)
    model, optimizer = accelerator.prepare(model, optimizer)
    emas = {"model": ema} if ema is not None else {}
    loop = TrainingLoop(cfg.run, accelerator, {"model": model}, {"model": optimizer}, {"model": scheduler}, emas,
                        name=stage_name(cfg))
    if resume:
        loop.resume(resume)

    def step_fn(step: int) -> dict[str, float]:
        generator = step_generator(cfg.run.seed, step, accelerator.process_index, "cpu")
        batch = sample_batch(dataset, cfg.run.batch_size, generator, device, prompts)
        latents = batch["latents"]
        control = batch["control"] if action else None
        observe_control_statistics(model, latents, control)
        sigma = sample_sigmas(latents.shape[0], model_config.shift, generator, device)
        noise = torch.randn(latents.shape, generator=generator).to(device)
        with accelerator.autocast():
            loss = flow_matching_loss(model, latents, control, sigma, noise, batch.get("text_embeds"))
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), cfg.optim.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        if ema is not None:
            ema.update(trainable_named_parameters(accelerator.unwrap_model(model)))
        return {f"{stage_name(cfg)}/flow_matching": loss.item()}

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
