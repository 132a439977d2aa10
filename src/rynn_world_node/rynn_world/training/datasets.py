"""From a DataConfig to clips (pixels) and cached latent clips (what the DiT trains on)."""

from pathlib import Path

import torch

from rynn_common.config_io import to_dict

from ..data import EgoDexDataset, LatentClipDataset, RobotEpisodeDataset, VitraDataset, cache_latents
from ..data.clips import ClipMix
from ..data.latent_cache import cache_is_current
from ..model.configs import WorldModelConfig
from .config import DataConfig


def build_clip_dataset(data: DataConfig, model: WorldModelConfig, clip_frames: int | None = None):
    frames = clip_frames or data.clip_frames
    common = dict(clip_frames=frames, height=model.height, width=model.width, fps=model.fps, stride=data.stride)
    if data.more_roots and data.kind != "robot_episodes":
        raise ValueError(f"data.more_roots mixes robot episodes only; data.kind is {data.kind!r}")
    if data.kind == "robot_episodes":
        first = RobotEpisodeDataset(data.root, tasks=data.tasks, episodes=data.episodes,
                                    exclude_episodes=data.exclude_episodes, **common)
        if not data.more_roots:
            return first
        more = [RobotEpisodeDataset(extra.root, tasks=data.tasks, episodes=extra.episodes,
                                    exclude_episodes=extra.exclude_episodes,
                                    **{**common, "stride": extra.stride or data.stride}) for extra in data.more_roots]
        return ClipMix([first, *more])
    if data.kind == "egodex":
        return EgoDexDataset(data.root, tasks=data.tasks, **common)
    if data.kind == "vitra":
        return VitraDataset(data.root, **common)
    raise ValueError(f"data.kind must be robot_episodes, egodex or vitra, got {data.kind!r}")


def build_latent_dataset(data: DataConfig, model: WorldModelConfig, vae, output_dir: Path) -> LatentClipDataset:
    """Encode the clips once (into data.latent_cache or <output_dir>/latents) and load them; a cache made
    by another VAE or from other data is encoded again."""
    directory = Path(data.latent_cache) if data.latent_cache else Path(output_dir) / "latents"
    made_from = {**to_dict(data), "latent_cache": None, "height": model.height, "width": model.width, "fps": model.fps}
    if not cache_is_current(directory, vae, made_from):
        cache_latents(build_clip_dataset(data, model), vae, directory, data=made_from)
    return LatentClipDataset(directory)


def sample_batch(dataset, batch_size: int, generator: torch.Generator, device,
                 prompts: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """A batch drawn with the step's generator (reproducible, resume-safe); with `prompts` (task name ->
    prompt embedding) it also holds each clip's task prompt as "text_embeds"."""
    picks = torch.randint(len(dataset), (batch_size,), generator=generator).tolist()
    items = [dataset[i] for i in picks]
    batch = {k: torch.stack([item[k] for item in items]).to(device) for k in items[0]}
    if prompts is not None:
        batch["text_embeds"] = torch.stack([prompts[dataset.entries[i]["task"]] for i in picks]).to(device)
    return batch


def check_prompts_cover_tasks(dataset: LatentClipDataset, prompts: dict[str, torch.Tensor], where: str) -> None:
    missing = sorted({e["task"] for e in dataset.entries} - set(prompts))
    if missing:
        raise ValueError(f"{where} has no prompt embedding for the tasks {missing} (has {sorted(prompts)})")
