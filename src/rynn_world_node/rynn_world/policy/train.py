"""Training LeRobot's ACT on the project's LeRobot v3 datasets, and loading what it saved.

The model, its loss (L1 on the action chunk + the VAE's KL term) and its normalisation are LeRobot's
(``ACTPolicy``, ``make_act_pre_post_processors``); this module only sizes the configuration, feeds it
batches from ``dataset.ActionChunkDataset`` and runs the optimiser LeRobot's ACT preset names (AdamW,
a separate backbone learning rate). No pretrained backbone weights can be fetched on these machines:
the ResNet is trained from scratch (``pretrained_backbone_weights=None``).

A trained policy is a directory: ``policy/`` (LeRobot's ``save_pretrained``: config.json and
model.safetensors), ``stats.json`` (the normalisation statistics of its training data) and
``training.json`` (settings, data sources, loss curve, duration, LeRobot version).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from rynn_common.action_layout import ACTION_DIM
from rynn_robot_bridge.export.lerobot import IMAGE_KEY

from .dataset import ACTION_KEY, STATE_KEY, ActionChunkDataset, PolicyEpisode, feature_stats
from .lerobot_compat import LeRobotACT, load_act


@dataclass(frozen=True)
class PolicySize:
    """The ACT configuration's sizes. Defaults: the CPU recipe; ``FULL_SIZE``: LeRobot's ACT defaults."""

    image_height: int = 48
    image_width: int = 78
    chunk_size: int = 16  # actions predicted per inference (1 s at 16 FPS)
    n_action_steps: int = 8  # of which this many are executed before the next inference
    dim_model: int = 256
    n_heads: int = 8
    dim_feedforward: int = 1024
    n_encoder_layers: int = 2
    n_decoder_layers: int = 1
    n_vae_encoder_layers: int = 2
    latent_dim: int = 32
    use_vae: bool = True
    kl_weight: float = 10.0
    dropout: float = 0.1
    vision_backbone: str = "resnet18"


FULL_SIZE = PolicySize(image_height=480, image_width=640, chunk_size=100, n_action_steps=100, dim_model=512,
                       dim_feedforward=3200, n_encoder_layers=4, n_vae_encoder_layers=4)


@dataclass(frozen=True)
class TrainSettings:
    steps: int = 2000
    batch_size: int = 8
    lr: float = 1e-4
    lr_backbone: float = 1e-4
    weight_decay: float = 1e-4
    grad_clip_norm: float = 10.0
    seed: int = 0
    threads: int = 1  # torch intra-op threads (the shared 2-core machine: 1)
    max_minutes: float = 0.0  # stop early after this long (0: run all steps)
    log_every: int = 50


def act_config(act: LeRobotACT, size: PolicySize, device: str = "cpu"):
    """LeRobot's ``ACTConfig`` for one egocentric camera, the 54-D joint state and the 54-D action."""
    feature = act.PolicyFeature
    return act.ACTConfig(
        input_features={IMAGE_KEY: feature(act.FeatureType.VISUAL, (3, size.image_height, size.image_width)),
                        STATE_KEY: feature(act.FeatureType.STATE, (ACTION_DIM,))},
        output_features={ACTION_KEY: feature(act.FeatureType.ACTION, (ACTION_DIM,))},
        device=device, push_to_hub=False, pretrained_backbone_weights=None,
        chunk_size=size.chunk_size, n_action_steps=size.n_action_steps, vision_backbone=size.vision_backbone,
        dim_model=size.dim_model, n_heads=size.n_heads, dim_feedforward=size.dim_feedforward,
        n_encoder_layers=size.n_encoder_layers, n_decoder_layers=size.n_decoder_layers,
        n_vae_encoder_layers=size.n_vae_encoder_layers, latent_dim=size.latent_dim, use_vae=size.use_vae,
        kl_weight=size.kl_weight, dropout=size.dropout,
    )


def stats_tensors(stats: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, torch.Tensor]]:
    return {key: {name: torch.as_tensor(np.asarray(value, dtype=np.float32)) for name, value in values.items()}
            for key, values in stats.items()}


@dataclass
class TrainedPolicy:
    """A LeRobot ACT policy with its pre/post-processors (normalisation), ready for ``select_action``."""

    policy: torch.nn.Module
    preprocessor: Callable
    postprocessor: Callable
    size: PolicySize
    info: dict

    def reset(self) -> None:
        self.policy.reset()

    @torch.no_grad()
    def act(self, image: np.ndarray, state: np.ndarray) -> np.ndarray:
        """One 54-D action from a policy-size (H, W, 3) uint8 frame and the 54-D joint state."""
        from .dataset import image_tensor

        batch = self.preprocessor({IMAGE_KEY: image_tensor(image), STATE_KEY: torch.as_tensor(state, dtype=torch.float32)})
        action = self.postprocessor(self.policy.select_action(batch))
        return action.reshape(-1).double().numpy()


def train_policy(episodes: list[PolicyEpisode], out: Path, size: PolicySize = PolicySize(),
                 settings: TrainSettings = TrainSettings(), sources: dict | None = None,
                 progress: Callable[[str], None] = print) -> dict:
    """Train ACT on ``episodes`` (images already at ``size``) and save it under ``out``; returns training.json."""
    act = load_act()
    torch.set_num_threads(settings.threads)
    torch.manual_seed(settings.seed)
    shape = episodes[0].images.shape[1:3]
    if shape != (size.image_height, size.image_width):
        raise ValueError(f"episode images are {shape}, the policy's {size.image_height}x{size.image_width}")
    stats = feature_stats(episodes)
    config = act_config(act, size)
    config.optimizer_lr, config.optimizer_lr_backbone = settings.lr, settings.lr_backbone
    config.optimizer_weight_decay = settings.weight_decay
    policy = act.ACTPolicy(config)
    preprocessor, _ = act.make_pre_post_processors(config, dataset_stats=stats_tensors(stats))
    # LeRobot's ACT preset (AdamW, backbone parameter group); fused: one kernel for all parameters (CPU too)
    optimizer = torch.optim.AdamW(policy.get_optim_params(), lr=settings.lr, weight_decay=settings.weight_decay,
                                  fused=True)
    data = ActionChunkDataset(episodes, size.chunk_size)
    generator = torch.Generator().manual_seed(settings.seed)
    sampler = torch.utils.data.RandomSampler(data, replacement=True, num_samples=settings.steps * settings.batch_size,
                                             generator=generator)
    loader = torch.utils.data.DataLoader(data, batch_size=settings.batch_size, sampler=sampler, num_workers=0)
    policy.train()
    curve, started, step = [], time.monotonic(), 0
    running = {}
    for step, batch in enumerate(loader, start=1):
        loss, parts = policy.forward(preprocessor(batch))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), settings.grad_clip_norm)
        optimizer.step()
        for name, value in {"loss": loss.item(), **parts}.items():
            running[name] = running.get(name, 0.0) + value
        out_of_time = bool(settings.max_minutes) and time.monotonic() - started > 60 * settings.max_minutes
        if step % settings.log_every == 0 or step == settings.steps or out_of_time:
            count = step % settings.log_every or settings.log_every
            entry = {"step": step, **{k: v / count for k, v in running.items()}, "seconds": time.monotonic() - started}
            curve.append(entry)
            running = {}
            progress(f"step {step}/{settings.steps}: " + " ".join(f"{k} {v:.4f}" for k, v in entry.items() if k != "step"))
        if out_of_time:
            progress(f"stopped after {settings.max_minutes:g} min at step {step}")
            break
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    policy.save_pretrained(out / "policy")
    (out / "stats.json").write_text(json.dumps(
        {k: {n: v.tolist() for n, v in values.items()} for k, values in stats.items()}))
    info = {
        "lerobot_version": act.version, "policy": "act", "backbone_weights": "none (trained from scratch)",
        "size": asdict(size), "settings": asdict(settings), "steps_done": step,
        "duration_s": round(time.monotonic() - started, 1), "curve": curve,
        "episodes": len(episodes), "frames": int(sum(len(e.action) for e in episodes)),
        "modes": sorted({e.mode for e in episodes}), "tasks": sorted({e.task for e in episodes}),
        "sources": sources or {}, "parameters": int(sum(p.numel() for p in policy.parameters())),
    }
    (out / "training.json").write_text(json.dumps(info, indent=2))
    return info


def load_policy(directory: Path, threads: int = 1) -> TrainedPolicy:
    """A policy ``train_policy`` saved, in eval mode on the CPU."""
    directory = Path(directory)
    act = load_act()
    torch.set_num_threads(threads)
    info = json.loads((directory / "training.json").read_text())
    size = PolicySize(**{f.name: info["size"][f.name] for f in fields(PolicySize)})
    stats = {k: {n: np.asarray(v) for n, v in values.items()}
             for k, values in json.loads((directory / "stats.json").read_text()).items()}
    policy = act.ACTPolicy.from_pretrained(directory / "policy")
    policy.eval()
    preprocessor, postprocessor = act.make_pre_post_processors(policy.config, dataset_stats=stats_tensors(stats))
    return TrainedPolicy(policy, preprocessor, postprocessor, size, info)
