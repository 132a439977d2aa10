"""A frame strip for docs/policy_learning.md: what a policy did next to what it learned from.

    .venv/bin/python scripts/policy_frames.py --policy data/policy/act_digital \\
        --episode data/policy/real_block_pushing/block_pushing/episode_0000 \\
        --episode data/policy/digital_block_pushing/block_pushing/episode_0000 --out docs/policy_learning_frames.png

Row 1: one closed-loop trial of ``--policy`` (evaluation scene ``--trial``, the camera frames as the
policy saw them, scaled up); then one row per ``--episode`` (a training episode's camera frames as
recorded: a real episode and its digital twin). ``--columns`` frames per row, evenly spaced from the
first to the last.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_retarget", "rynn_robot_bridge", "rynn_world_node")]

import cv2

import rynn_robot_bridge.sim  # noqa: F401  (headless GL first)
from rynn_world.data.robot_episodes import read_episode
from rynn_world.policy.rollout import evaluation_seeds, run_trial
from rynn_world.policy.train import load_policy

LABEL_HEIGHT = 18


def evenly_spaced(frames: np.ndarray, count: int) -> list[np.ndarray]:
    return [frames[i] for i in np.linspace(0, len(frames) - 1, count).round().astype(int)]


def labelled_row(frames: list[np.ndarray], label: str, height: int, width: int) -> np.ndarray:
    """``frames`` side by side at (height, width), under a line of text."""
    tiles = [cv2.resize(f, (width, height), interpolation=cv2.INTER_NEAREST) for f in frames]
    row = np.concatenate(tiles, axis=1)
    banner = np.full((LABEL_HEIGHT, row.shape[1], 3), 255, np.uint8)
    cv2.putText(banner, label, (4, LABEL_HEIGHT - 5), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
    return np.concatenate([banner, row], axis=0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", type=Path, required=True)
    parser.add_argument("--task", default="block_pushing")
    parser.add_argument("--trial", type=int, default=0, help="evaluation scene index (as in evaluate)")
    parser.add_argument("--episode", type=Path, action="append", default=[], help="a training episode directory")
    parser.add_argument("--columns", type=int, default=6)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    seed = evaluation_seeds(args.task, args.trial + 1)[args.trial]
    result = run_trial(load_policy(args.policy), args.task, seed, keep_images=True)
    episodes = [read_episode(path) for path in args.episode]
    height, width = episodes[0].frames.shape[1:3] if episodes else (128, 208)
    outcome = "success" if result.success else "failure"
    rows = [labelled_row(evenly_spaced(result.images, args.columns),
                         f"{args.policy.name}: evaluation trial {args.trial} (seed {seed}), {outcome}; policy input",
                         height, width)]
    for path, episode in zip(args.episode, episodes):
        rows.append(labelled_row(evenly_spaced(episode.frames, args.columns),
                                 f"training episode {path.parent.parent.name}/{path.name}", height, width))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(args.out), cv2.cvtColor(np.concatenate(rows, axis=0), cv2.COLOR_RGB2BGR))
    print(f"{args.out}: {len(rows)} rows x {args.columns} frames; trial {outcome}")


if __name__ == "__main__":
    main()
