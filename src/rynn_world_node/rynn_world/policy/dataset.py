"""Policy training data: LeRobot v3 datasets, as the project's exporter writes them, at the policy's image size.

One path for every source: simulated real episodes and the data engine's digital episodes both reach
training as LeRobot v3 datasets written by ``rynn_robot_bridge.export.lerobot`` (the engine writes one
beside its episodes; ``python -m rynn_robot_bridge.export.lerobot`` makes one from any episode bags), so
the episode schema (``observation.state`` = /joint_states, ``action`` = /rynn/action on the frame clock)
is resolved in one place, the exporter. Here the dataset's parquet rows and its video frames are read
back; every frame becomes the policy's input through ``image_input.to_model_rgb`` (the one image
conversion), and the closed-loop rollout converts its camera frames with the same ``policy_image``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import pyarrow.parquet as pq
import torch

from rynn_robot_bridge.export.lerobot import DATA_PATH, EPISODES_PATH, IMAGE_KEY, VIDEO_PATH

from ..image_input import to_model_rgb

STATE_KEY = "observation.state"
ACTION_KEY = "action"
MIN_STD = 1e-2  # rad (and image units): joints that never move in the data (fingers of an idle hand) are not
# divided by ~0, so a rollout's tiny deviation there does not become a huge normalised input


@dataclass
class PolicyEpisode:
    """One episode at the policy's image size, frame-aligned."""

    images: np.ndarray  # (T, H, W, 3) uint8
    state: np.ndarray  # (T, 54) float32
    action: np.ndarray  # (T, 54) float32
    task: str
    mode: str  # the dataset's episode mode: "real" or "digital"
    source: str  # the source bag's name (episode identity across real and digital datasets)


def policy_image(rgb: np.ndarray, height: int, width: int) -> np.ndarray:
    """A camera frame (any size, RGB) as the policy sees it: (H, W, 3) uint8."""
    return to_model_rgb(rgb, height, width, "policy camera frame")


def read_lerobot_dataset(root: Path, height: int, width: int, limit: int = 0) -> list[PolicyEpisode]:
    """Every episode of the LeRobot v3 dataset at ``root`` (the first ``limit`` when > 0)."""
    root = Path(root)
    info_path = root / "meta" / "info.json"
    if not info_path.is_file():
        raise FileNotFoundError(f"{info_path} not found: {root} is not a LeRobot v3 dataset "
                                "(make one with python -m rynn_robot_bridge.export.lerobot)")
    info = json.loads(info_path.read_text())
    if info.get("data_path") != DATA_PATH or info.get("video_path") != VIDEO_PATH:
        raise ValueError(f"{root}: unexpected LeRobot layout (data_path {info.get('data_path')!r})")
    fps = float(info["fps"])
    rows = pq.read_table(root / EPISODES_PATH.format(chunk_index=0, file_index=0)).to_pylist()
    rows.sort(key=lambda r: r["episode_index"])
    if limit > 0:
        rows = rows[:limit]
    tables: dict[tuple[int, int], dict[str, np.ndarray]] = {}
    videos: dict[tuple[int, int], np.ndarray] = {}
    episodes = []
    for row in rows:
        data_key = (row["data/chunk_index"], row["data/file_index"])
        if data_key not in tables:
            table = pq.read_table(root / DATA_PATH.format(chunk_index=data_key[0], file_index=data_key[1]))
            tables[data_key] = {name: _column(table, name) for name in ("index", STATE_KEY, ACTION_KEY)}
        columns = tables[data_key]
        rows_of_episode = np.flatnonzero((columns["index"] >= row["dataset_from_index"])
                                         & (columns["index"] < row["dataset_to_index"]))
        if len(rows_of_episode) != row["length"]:
            raise ValueError(f"{root}: episode {row['episode_index']} has {len(rows_of_episode)} rows, "
                             f"its metadata says {row['length']}")
        video_key = (row[f"videos/{IMAGE_KEY}/chunk_index"], row[f"videos/{IMAGE_KEY}/file_index"])
        if video_key not in videos:
            path = root / VIDEO_PATH.format(video_key=IMAGE_KEY, chunk_index=video_key[0], file_index=video_key[1])
            videos[video_key] = _decode_video(path, height, width)
        start = int(round(row[f"videos/{IMAGE_KEY}/from_timestamp"] * fps))
        images = videos[video_key][start:start + row["length"]]
        if len(images) != row["length"]:
            raise ValueError(f"{root}: episode {row['episode_index']} has {len(images)} video frames of {row['length']}")
        episodes.append(PolicyEpisode(images, columns[STATE_KEY][rows_of_episode], columns[ACTION_KEY][rows_of_episode],
                                      row["tasks"][0], row["mode"], row["source_bag"]))
    return episodes


def _column(table, name: str) -> np.ndarray:
    column = table.column(name).combine_chunks()
    if name == "index":
        return column.to_numpy()
    return np.asarray(column.flatten().to_numpy(), dtype=np.float32).reshape(len(column), -1)


def _decode_video(path: Path, height: int, width: int) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.stack([policy_image(frame.to_ndarray(format="rgb24"), height, width)
                         for frame in container.decode(video=0)])


def feature_stats(episodes: list[PolicyEpisode]) -> dict[str, dict[str, np.ndarray]]:
    """Mean and std of the policy's inputs and outputs over ``episodes`` (images per channel, in [0, 1])."""
    state = np.concatenate([e.state for e in episodes])
    action = np.concatenate([e.action for e in episodes])
    pixels = np.concatenate([e.images[::4].reshape(-1, 3) for e in episodes]).astype(np.float64) / 255.0

    def stats(values: np.ndarray, shape=None) -> dict[str, np.ndarray]:
        mean, std = values.mean(0), np.maximum(values.std(0), MIN_STD)
        return {"mean": mean.reshape(shape or mean.shape).astype(np.float32),
                "std": std.reshape(shape or std.shape).astype(np.float32),
                "min": values.min(0).reshape(shape or mean.shape).astype(np.float32),
                "max": values.max(0).reshape(shape or mean.shape).astype(np.float32)}

    return {STATE_KEY: stats(state), ACTION_KEY: stats(action), IMAGE_KEY: stats(pixels, (3, 1, 1))}


def image_tensor(images: np.ndarray) -> torch.Tensor:
    """(..., H, W, 3) uint8 -> (..., 3, H, W) float32 in [0, 1], LeRobot's image convention."""
    return torch.from_numpy(np.ascontiguousarray(images)).movedim(-1, -3).float().div_(255.0)


class ActionChunkDataset(torch.utils.data.Dataset):
    """Every frame of ``episodes`` as one training sample: image and state now, the next ``chunk`` actions
    (past the episode's end: the last action, marked ``action_is_pad``), as LeRobot's ACT trains."""

    def __init__(self, episodes: list[PolicyEpisode], chunk: int):
        if not episodes:
            raise ValueError("no episodes to train on")
        self.episodes, self.chunk = episodes, int(chunk)
        self.items = [(i, t) for i, e in enumerate(episodes) for t in range(len(e.action))]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        i, t = self.items[index]
        episode = self.episodes[i]
        steps = t + np.arange(self.chunk)
        pad = steps >= len(episode.action)
        actions = episode.action[np.minimum(steps, len(episode.action) - 1)]
        return {IMAGE_KEY: image_tensor(episode.images[t]), STATE_KEY: torch.from_numpy(episode.state[t]),
                ACTION_KEY: torch.from_numpy(actions), "action_is_pad": torch.from_numpy(pad)}
