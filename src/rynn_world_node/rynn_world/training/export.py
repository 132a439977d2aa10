"""Writing and reading world-model checkpoint directories: transformer/ + vae/ in diffusers layout
(what rynn_world.nodes.model_loading and load_transformer read)."""

from pathlib import Path

import torch
from diffusers import AutoencoderKLWan

from ..model.configs import WorldModelConfig
from ..model.transformer import RynnWorldTransformer
from ..model.vae import build_vae
from ..model.weights import load_transformer


def save_world_model(directory, transformer: RynnWorldTransformer | None = None, vae: AutoencoderKLWan | None = None) -> Path:
    directory = Path(directory)
    if transformer is not None:
        transformer.save_pretrained(str(directory / "transformer"), safe_serialization=True)
    if vae is not None:
        vae.save_pretrained(str(directory / "vae"), safe_serialization=True)
    return directory


def load_vae(config: WorldModelConfig, checkpoint: str | None, device=None, dtype=torch.float32) -> AutoencoderKLWan:
    """The VAE of a checkpoint directory (<dir>/vae or <dir> itself), or a fresh one for the config."""
    if checkpoint is None:
        return build_vae(config.vae, device=device, dtype=dtype)
    path = Path(checkpoint)
    path = path / "vae" if (path / "vae").is_dir() else path
    return AutoencoderKLWan.from_pretrained(str(path)).to(device=device, dtype=dtype).eval()


def load_or_build_transformer(config: WorldModelConfig, checkpoint: str | None, allow_missing_control: bool = False,
                              device=None) -> RynnWorldTransformer:
    if checkpoint is None or not (Path(checkpoint) / "transformer").is_dir():
        return RynnWorldTransformer(**config.transformer, null_text_tokens=config.null_text_tokens).to(device)
    return load_transformer(Path(checkpoint) / "transformer", device=device, allow_missing_control=allow_missing_control)
