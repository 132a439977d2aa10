"""The shared training loop: accelerate set-up, resumable steps, tqdm, TensorBoard, loss plot.

Entry points build their modules and a `step_fn(step) -> {loss name: float}`; the loop owns
everything else. Batches and noise are drawn from generators seeded by (seed, step, rank), so a
resumed run draws exactly what the uninterrupted run would have.
"""

import json
import math
from collections.abc import Callable
from pathlib import Path

import torch
from accelerate import Accelerator
from torch.distributed.tensor import DTensor
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from .config import OptimConfig, RunConfig
from .distributed import rank_digests
from .plots import plot_losses
from .state import checkpoint_dir, gather_training_state, latest_checkpoint, load_training_state, save_training_state


def make_accelerator(run: RunConfig) -> Accelerator:
    if run.num_threads:
        torch.set_num_threads(run.num_threads)
    mixed = run.mixed_precision if torch.cuda.is_available() else "no"  # bf16 is a GPU setting here
    return Accelerator(mixed_precision=mixed, cpu=not torch.cuda.is_available())


def lr_schedule(optimizer: torch.optim.Optimizer, optim: OptimConfig, total_steps: int):
    """Linear warm-up over `optim.warmup_steps` (200 in the paper), then constant, or with
    decay="cosine" a half-cosine down to `final_lr_ratio` x lr at `total_steps`."""
    if optim.decay not in ("constant", "cosine"):
        raise ValueError(f"optim.decay must be 'constant' or 'cosine', got {optim.decay!r}")
    warmup = max(1, optim.warmup_steps)

    def factor(step: int) -> float:
        if step + 1 < warmup or optim.decay == "constant":
            return min(1.0, (step + 1) / warmup)
        progress = min(1.0, (step + 1 - warmup) / max(1, total_steps - warmup))
        return optim.final_lr_ratio + (1.0 - optim.final_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def adamw(parameters, optim: OptimConfig, lr: float | None = None) -> torch.optim.Optimizer:
    params = [p for p in parameters if p.requires_grad]
    if not params:
        raise ValueError("nothing to train: no parameter requires a gradient")
    return torch.optim.AdamW(params, lr=optim.lr if lr is None else lr, betas=optim.betas, weight_decay=optim.weight_decay)


def average_gradients(module: torch.nn.Module, accelerator: Accelerator) -> None:
    """Data-parallel gradient averaging for modules trained through methods other than forward
    (cached rollouts, VAE encode/decode), which DDP's forward hooks never see. A sharded module's
    gradients were averaged by FSDP in backward; only those it leaves whole are averaged here."""
    if accelerator.num_processes == 1:
        return
    for p in module.parameters():
        if p.grad is not None and not isinstance(p.grad, DTensor):
            torch.distributed.all_reduce(p.grad, op=torch.distributed.ReduceOp.AVG)


def step_generator(seed: int, step: int, rank: int, device) -> torch.Generator:
    """The per-step random stream (batch choice, noise, timesteps)."""
    return torch.Generator(device).manual_seed(((seed * 1_000_003 + step) * 1009 + rank) % (2**63))


class TrainingLoop:
    def __init__(self, run: RunConfig, accelerator: Accelerator, modules: dict, optimizers: dict,
                 schedulers: dict, emas: dict | None = None, name: str = "train"):
        self.run_config = run
        self.accelerator = accelerator
        self.modules, self.optimizers, self.schedulers = modules, optimizers, schedulers
        self.emas = emas or {}
        self.name = name
        self.output_dir = Path(run.output_dir)
        self.history: dict[str, list[tuple[int, float]]] = {}
        self.step = 0

    def resume(self, checkpoint: str | Path | None = "latest") -> bool:
        path = latest_checkpoint(self.output_dir) if checkpoint == "latest" else (Path(checkpoint) if checkpoint else None)
        if path is None:
            return False
        unwrapped = {n: self.accelerator.unwrap_model(m) for n, m in self.modules.items()}
        self.step, self.history = load_training_state(path, unwrapped, self.optimizers, self.schedulers, self.emas)
        self.history = {k: [tuple(v) for v in values] for k, values in self.history.items()}
        self.accelerator.print(f"resumed from {path} at step {self.step}")
        return True

    def save(self) -> Path | None:
        self.accelerator.wait_for_everyone()
        modules = {n: self.accelerator.unwrap_model(m) for n, m in self.modules.items()}
        main = self.accelerator.is_main_process
        # collectives: every rank, before the main one saves
        digests = rank_digests(self.accelerator, modules)
        snapshot = gather_training_state(modules, self.optimizers, self.emas, keep=main)
        if not main:
            return None
        return save_training_state(checkpoint_dir(self.output_dir, self.step), self.step, snapshot, self.schedulers,
                                   self.emas, self.history, extra=digests)

    def run(self, total_steps: int, step_fn: Callable[[int], dict[str, float]]) -> dict[str, list[tuple[int, float]]]:
        run = self.run_config
        main = self.accelerator.is_main_process
        writer = SummaryWriter(str(self.output_dir / "tensorboard")) if main else None
        bar = tqdm(total=total_steps, initial=self.step, desc=self.name, disable=not (main and run.progress),
                   dynamic_ncols=True)
        try:
            while self.step < total_steps:
                losses = step_fn(self.step)
                self.step += 1
                for key, value in losses.items():
                    if not math.isfinite(value):
                        raise FloatingPointError(f"{key} became {value} at step {self.step}")
                    self.history.setdefault(key, []).append((self.step, float(value)))
                    if writer is not None and self.step % run.log_every == 0:
                        writer.add_scalar(key, value, self.step)
                bar.update(1)
                bar.set_postfix({k: f"{v:.4f}" for k, v in losses.items()})
                if run.save_every and self.step % run.save_every == 0 and self.step < total_steps:
                    self.save()
            self.save()
        finally:
            bar.close()
            if writer is not None:
                writer.close()
        if main:
            plot_losses(self.history, self.output_dir / "loss_curve.png", f"{self.name}: {self.output_dir}")
            (self.output_dir / "losses.json").write_text(json.dumps(self.history))
        return self.history
