"""Autoregressive distillation of the bidirectional teacher into the causal 4-step student.

Phase 1 (steps < warmup_steps): causal flow-matching warm-up, teacher-forced MSE on the velocity
with the streaming context (sink + window, training.causal.teacher_forcing_layout); the only
phase that updates the control statistics (clean data). Phase 2: DMD. Each DMD step makes `critic_updates_per_generator` critic (fake
score) updates by flow matching on fresh student rollouts, then one generator update that pushes
the rollout along fake-minus-real score, the real score being the frozen teacher. Rollouts run
the 4-step schedule through the KV cache with gradients across chunks.

    python -m rynn_world.training.distill --config src/rynn_world_node/config/distill_cpu.yaml
    accelerate launch --config_file src/rynn_world_node/config/accelerate_fsdp.yaml -m rynn_world.training.distill --config ...

Under an FSDP launch the teacher, the student and the critic are each sharded over the ranks
(training.sharding; the student keeps its gathered weights through a step, since its gradients run
through the KV cache); under DDP every rank holds all three and averages the gradients itself.

Writes <output_dir>/final_warmup/ (the student without DMD) and <output_dir>/final/.
"""

import copy
from pathlib import Path

import torch

from .. import flow_matching as fm
from ..model.configs import get_config
from .causal import causal_flow_matching_loss, student_rollout
from .config import DistillConfig, run_from_command_line
from .datasets import build_latent_dataset, sample_batch
from .distributed import check_launch, launch_fsdp_plugin
from .ema import EMA
from .export import load_or_build_transformer, load_vae, save_world_model
from .loop import TrainingLoop, adamw, average_gradients, lr_schedule, make_accelerator, step_generator
from .lora import export_transformer
from .losses import dmd_generator_loss, flow_matching_loss, observe_control_statistics, sample_sigmas
from .sharding import release_gathered, shard_model, whole_copy


def distill(cfg: DistillConfig, resume: str | None = "latest") -> Path:
    accelerator = make_accelerator(cfg.run)
    model_config = get_config(cfg.model)
    check_launch(accelerator, model_config, "distill", cfg.run.mixed_precision)  # a bad FSDP launch fails here, not at prepare
    device = accelerator.device
    plugin = launch_fsdp_plugin(accelerator)
    # sharded, the three transformers are built in CPU memory and each rank moves only its shards to `device`
    transformer_device = "cpu" if plugin is not None else device
    vae = load_vae(model_config, cfg.teacher_checkpoint, device=device)
    with accelerator.main_process_first():
        dataset = build_latent_dataset(cfg.data, model_config, vae, Path(cfg.run.output_dir))
    torch.manual_seed(cfg.run.seed)
    teacher = load_or_build_transformer(model_config, cfg.teacher_checkpoint, device=transformer_device)
    teacher = teacher.eval().requires_grad_(False)
    student = copy.deepcopy(teacher).train().requires_grad_(True)
    critic = copy.deepcopy(teacher).train().requires_grad_(True)
    if cfg.run.gradient_checkpointing:
        student.enable_gradient_checkpointing()
        critic.enable_gradient_checkpointing()
    if plugin is not None:  # before the optimizers, which then hold the shards
        precision = accelerator.mixed_precision
        teacher, critic = (shard_model(m, plugin, precision, device) for m in (teacher, critic))
        student = shard_model(student, plugin, precision, device, keep_gathered=True)
    optimizers = {
        "warmup": adamw(student.parameters(), cfg.optim, cfg.warmup_lr),
        "generator": adamw(student.parameters(), cfg.optim, cfg.generator_lr),
        "critic": adamw(critic.parameters(), cfg.optim, cfg.critic_lr),
    }
    total = {"warmup": cfg.warmup_steps, "generator": cfg.dmd_steps,
             "critic": cfg.dmd_steps * cfg.critic_updates_per_generator}
    schedulers = {n: lr_schedule(o, cfg.optim, total[n]) for n, o in optimizers.items()}
    if plugin is None:  # accelerate's FSDP prepares one model with its optimizer; sharded, they stay torch's
        for name in optimizers:
            optimizers[name] = accelerator.prepare(optimizers[name])
    emas = {"student": EMA(student.named_parameters(), cfg.ema_decay)} if cfg.ema_decay else {}
    loop = TrainingLoop(cfg.run, accelerator, {"student": student, "critic": critic}, optimizers, schedulers, emas,
                        name="distill")
    if resume:
        loop.resume(resume)
    sigmas = fm.student_sigmas(model_config.denoising_list, model_config.shift)
    output_dir = Path(cfg.run.output_dir)

    def update(module, loss, name):
        accelerator.backward(loss)
        release_gathered(module)
        average_gradients(module, accelerator)
        torch.nn.utils.clip_grad_norm_(module.parameters(), cfg.optim.max_grad_norm)
        optimizers[name].step()
        schedulers[name].step()
        optimizers[name].zero_grad(set_to_none=True)

    def rollout(batch, generator):
        latents, control = batch["latents"], batch["control"]
        return student_rollout(student, latents[:, :, :1], control, latents.shape[2], sigmas,
                               model_config.block_frames, model_config.window_blocks, generator)

    def step_fn(step: int) -> dict[str, float]:
        generator = step_generator(cfg.run.seed, step, accelerator.process_index, "cpu")
        if step < cfg.warmup_steps:
            batch = sample_batch(dataset, cfg.run.batch_size, generator, device)
            latents = batch["latents"]
            observe_control_statistics(student, latents, batch["control"])
            sigma = sample_sigmas(latents.shape[0], model_config.shift, generator, device)
            noise = torch.randn(latents.shape, generator=generator).to(device)
            with accelerator.autocast():
                loss = causal_flow_matching_loss(student, latents, batch["control"], sigma, noise,
                                                 model_config.block_frames, model_config.window_blocks)
            update(student, loss, "warmup")
            if step + 1 == cfg.warmup_steps:
                warmed_up = whole_copy(student, keep=accelerator.is_main_process)  # a collective when sharded
                if warmed_up is not None:
                    save_world_model(output_dir / "final_warmup", export_transformer(warmed_up), vae)
            return {"distill/causal_flow_matching": loss.item()}
        critic_losses = []
        for _ in range(cfg.critic_updates_per_generator):
            batch = sample_batch(dataset, cfg.run.batch_size, generator, device)
            with torch.no_grad(), accelerator.autocast():
                sample = rollout(batch, generator)
            sigma = sample_sigmas(sample.shape[0], model_config.shift, generator, device)
            noise = torch.randn(sample.shape, generator=generator).to(device)
            with accelerator.autocast():
                critic_loss = flow_matching_loss(critic, sample, batch["control"], sigma, noise)
            update(critic, critic_loss, "critic")
            critic_losses.append(critic_loss.item())
        batch = sample_batch(dataset, cfg.run.batch_size, generator, device)
        sigma = sample_sigmas(batch["latents"].shape[0], model_config.shift, generator, device,
                              cfg.dmd_min_sigma, cfg.dmd_max_sigma)
        with accelerator.autocast():
            sample = rollout(batch, generator)
            noise = torch.randn(sample.shape, generator=generator).to(device)
            generator_loss = dmd_generator_loss(sample, batch["control"], teacher, critic, sigma, noise)
        update(student, generator_loss, "generator")
        if emas:
            emas["student"].update(student.named_parameters())
        with torch.no_grad():  # how far the student's sample is from the data: the curve to watch
            data_mse = float(((sample - batch["latents"])[:, :, 1:] ** 2).mean())
        return {"distill/dmd_generator": generator_loss.item(), "distill/critic_flow_matching": sum(critic_losses) / len(critic_losses),
                "distill/sample_mse_to_data": data_mse}

    loop.run(cfg.warmup_steps + cfg.dmd_steps, step_fn)
    final = output_dir / "final"
    if emas:
        emas["student"].copy_to(student)
    trained = whole_copy(student, keep=accelerator.is_main_process)  # a collective when sharded
    if trained is not None:
        save_world_model(final, export_transformer(trained), vae)
    return final


def main(argv: list[str] | None = None) -> None:
    run_from_command_line(DistillConfig, distill, "causal student", __doc__.splitlines()[0], argv)

if __name__ == "__main__":
    main()
