"""Checkpoints shipped inside the package, one directory per model config:
``<config name>/transformer/``, ``vae/`` (diffusers layout) and ``MODEL_CARD.md``.

Kept free of heavy imports: the recorder resolves the same default the world-model node loads,
so an episode's metadata names (and hashes) the weights that generated it.
"""

from importlib import resources
from pathlib import Path


def packaged_checkpoint(config_name: str) -> Path | None:
    """The shipped checkpoint directory for ``config_name``, or None when none ships."""
    path = Path(str(resources.files(__name__).joinpath(config_name)))
    return path if (path / "transformer").is_dir() and (path / "vae").is_dir() else None
