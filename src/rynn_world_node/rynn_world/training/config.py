"""Training configuration: dataclasses filled from YAML by rynn_common.config_io.load_config
(the suite's one loader: unknown keys and wrong types are errors that name the file and key)."""

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from rynn_common.config_io import load_config


@dataclass
class EpisodeRoot:
    """Another generator run whose clips join the data set's (robot episodes only), selected on its own."""

    root: str
    stride: int | None = None  # default: the data set's stride
    episodes: list[int] | None = None
    exclude_episodes: list[int] | None = None


@dataclass
class DataConfig:
    kind: str = "robot_episodes"  # robot_episodes | egodex | vitra
    root: str = "data/episodes"
    clip_frames: int = 81  # 1 + 4k: 81 (robot, EgoDex), 25 (VITRA), 9/17 on CPUs
    stride: int | None = None  # frames between clip starts; default clip_frames - 1
    tasks: list[str] | None = None
    episodes: list[int] | None = None  # robot episodes only: keep these episode numbers
    exclude_episodes: list[int] | None = None  # robot episodes only: the held-out ones
    latent_cache: str | None = None  # directory for cached VAE latents (encode once, reuse)
    more_roots: list[EpisodeRoot] = field(default_factory=list)  # robot episodes only: a mixed data set


@dataclass
class OptimConfig:
    lr: float = 1e-5
    warmup_steps: int = 200
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    max_grad_norm: float = 1.0
    decay: str = "constant"  # after warm-up: "constant" (the paper) or "cosine" (short from-scratch runs)
    final_lr_ratio: float = 0.01  # cosine: the learning rate at the last step, as a fraction of lr


@dataclass
class RunConfig:
    """What every entry point shares: where, how long, how it is logged and saved."""

    output_dir: str = "outputs/run"
    steps: int = 1000
    batch_size: int = 1
    seed: int = 0
    mixed_precision: str = "no"  # "bf16" on GPUs
    gradient_checkpointing: bool = False
    save_every: int = 500
    log_every: int = 10
    num_threads: int | None = None  # torch CPU threads (1 when sharing a machine)
    progress: bool = True


@dataclass
class TrainConfig:
    """Stage 1 (human video) or stage 2 (robot episodes) flow-matching training of the teacher."""

    model: str = "embedded_cpu"  # a name in rynn_world.model.configs
    stage: int | str = 2  # 1 (human video), 2 (robot episodes) or "ti2v" (text + image, no action)
    init_checkpoint: str | None = None  # dir with transformer/ (+ vae/); None = fresh weights
    vae_checkpoint: str | None = None  # dir with the VAE (defaults to init_checkpoint/vae)
    allow_missing_control: bool = True  # plain Wan weights start with a zero control branch
    finetune: str = "lora"  # lora | full
    lora_rank: int = 64
    ema_decay: float = 0.999  # full fine-tuning only
    # TI2V stage only: safetensors of prompt embeddings, one per task name (the base model's text
    # encoder output, format of export.NULL_TEXT_FILE); None: every clip has the null text embedding
    prompt_embeddings: str | None = None
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1e-5))
    run: RunConfig = field(default_factory=RunConfig)


@dataclass
class VAETrainConfig:
    """Autoencoder training for small configs that have no pretrained VAE (RGB and skeleton videos)."""

    model: str = "embedded_cpu"
    init_checkpoint: str | None = None
    clip_frames: int = 5
    crop: tuple[int, int] | None = None  # (h, w) random crops; the VAE is fully convolutional
    kl_weight: float = 1e-6
    sample_posterior: bool = True  # False: decode the posterior mean (a plain autoencoder; converges faster)
    skeleton_fraction: float = 0.3  # share of batches that are skeleton renders (the control input)
    # Decoder only: the encoder and the latent statistics stay as init_checkpoint has them, so latents,
    # a DiT trained on them and a tiny control encoder distilled from this encoder stay valid.
    frozen_encoder: bool = False
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1e-3, warmup_steps=50))
    run: RunConfig = field(default_factory=RunConfig)


@dataclass
class TinyDecoderConfig:
    """Distil a TinyVideoDecoder from a checkpoint's VAE decoder (serving on CPUs)."""

    model: str = "embedded_cpu"
    teacher_checkpoint: str = ""  # dir with vae/ and transformer/; "" = the packaged checkpoint of `model`
    decoder: dict = field(default_factory=dict)  # TinyVideoDecoder arguments (latent_width, frame_widths, ...)
    # start from this tiny decoder (a checkpoint dir with tiny_decoder/, or tiny_decoder/ itself) instead of fresh
    # weights: a VAE decoder fine-tuned under the same encoder needs only a short re-distillation
    init_checkpoint: str = ""
    # share of training clips decoded from the causal student's generated latents (what serving
    # decodes) rather than from the VAE encoder's latents of real frames
    generated_fraction: float = 0.5
    latent_crop: tuple[int, int] | None = None  # (h, w) random crops in latent cells (x8 pixels); None = whole frames
    loss_margin: int = 0  # latent cells at each crop edge left out of the loss (their teacher pixels saw outside latents)
    l1_weight: float = 1.0
    mse_weight: float = 1.0
    psnr_bar_db: float = 30.0  # held-out PSNR against the VAE's decode the decoder must reach to ship
    data: DataConfig = field(default_factory=DataConfig)
    eval_data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1e-3, warmup_steps=50, decay="cosine"))
    run: RunConfig = field(default_factory=RunConfig)


@dataclass
class TinyEncoderConfig:
    """Distil a TinyControlEncoder from a checkpoint's VAE encoder of control frames (serving on CPUs)."""

    model: str = "embedded_cpu"
    teacher_checkpoint: str = ""  # dir with vae/ and transformer/; "" = the packaged checkpoint of `model`
    encoder: dict = field(default_factory=dict)  # TinyControlEncoder arguments (frame_widths, latent_width, ...)
    l1_weight: float = 0.0
    mse_weight: float = 1.0
    # ships when its generated streams' PSNR against the recorded frames is at most this far below the
    # VAE encoder's (held-out clips, the live path end to end)
    psnr_tolerance_db: float = 0.3
    data: DataConfig = field(default_factory=DataConfig)
    eval_data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1e-3, warmup_steps=50, decay="cosine"))
    run: RunConfig = field(default_factory=RunConfig)


@dataclass
class DistillConfig:
    """Causal flow-matching warm-up, then DMD, starting from a trained teacher checkpoint."""

    model: str = "embedded_cpu"
    teacher_checkpoint: str = "outputs/teacher/final"
    warmup_steps: int = 1000
    warmup_lr: float = 1e-5
    dmd_steps: int = 1000
    generator_lr: float = 2e-6
    critic_lr: float = 5e-7
    critic_updates_per_generator: int = 5
    dmd_min_sigma: float = 0.02
    dmd_max_sigma: float = 0.98
    ema_decay: float | None = None
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1e-5, warmup_steps=200))
    run: RunConfig = field(default_factory=RunConfig)


def parse_overrides(pairs: list[str]) -> dict:
    """`key.sub=value` strings from the command line, values parsed as YAML."""
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"override {pair!r} must look like key.sub=value")
        overrides[key] = yaml.safe_load(value)
    return overrides


def run_from_command_line(config_class, run: Callable, what: str, description: str, argv: list[str] | None = None) -> None:
    """The shared CLI of the training entry points: ``--config YAML [--no-resume] [key.sub=value ...]``;
    ``run(cfg, resume=...)`` returns where it wrote ``what``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--no-resume", action="store_true", help="start fresh even if checkpoints exist")
    parser.add_argument("overrides", nargs="*", help="key.sub=value overrides of the YAML")
    args = parser.parse_args(argv)
    cfg = load_config(config_class, args.config, parse_overrides(args.overrides))
    print(f"{what} written to {run(cfg, resume=None if args.no_resume else 'latest')}")
