"""The episode directory layout every episode writer shares: the generator, the clip export and the data engine.

``<out>/<task>/episode_NNNN/`` holds ``bag/``, ``frames.npz`` and ``episode.json``; ``<out>/index.json``
lists every finished episode. Here, not in the generator, so writing the layout needs no operator side.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

INDEX_NAME = "index.json"


def episode_dir(out: Path, task: str, index: int) -> Path:
    return out / task / f"episode_{index:04d}"


def write_episode_files(directory: Path, frames: dict[str, np.ndarray], summary: dict) -> None:
    """``frames.npz`` and ``episode.json``, the files every episode directory holds besides ``bag/``."""
    np.savez_compressed(directory / "frames.npz", **frames)
    (directory / "episode.json").write_text(json.dumps(summary, indent=2, sort_keys=True))


def write_index(out: Path) -> list[dict]:
    """``index.json``: every finished episode's summary, sorted by task and episode (written atomically)."""
    entries = [json.loads(p.read_text()) for p in sorted(out.glob("*/episode_[0-9][0-9][0-9][0-9]/episode.json"))]
    entries.sort(key=lambda e: (e["task"], e["episode"]))
    tmp = out / (INDEX_NAME + ".tmp")
    tmp.write_text(json.dumps({"episodes": entries}, indent=2, sort_keys=True))
    os.replace(tmp, out / INDEX_NAME)
    return entries
