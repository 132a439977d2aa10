"""Generate paired episodes: ``python -m rynn_world.episodes.generate --episodes N --seed S --out DIR``.

Per episode: ``<out>/<task>/episode_NNNN/`` with ``bag/`` (rosbag2 MCAP),
``frames.npz`` (frame-aligned arrays for fast training reads: stamps, actions, joint positions,
the task objects' segmentation masks and positions) and
``episode.json``. An episode is built in a ``.partial`` directory and renamed
into place when complete, so a crash never leaves a half-written episode, and
a re-run skips finished ones (resumable). ``<out>/index.json`` lists them all.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
from pathlib import Path

from tqdm import tqdm

import rynn_robot_bridge.sim  # noqa: F401  (headless GL before mujoco loads)
from rynn_common.directories import directory_in_progress
from rynn_robot_bridge.episodes.layout import INDEX_NAME, episode_dir, write_episode_files, write_index
from rynn_robot_bridge.sim.scenes import TASKS

from .rollout import OPERATORS, EpisodeSettings, episode_seed, record_episode


def generate(out: Path, tasks: list[str], episodes: int, seed: int, settings: EpisodeSettings,
             progress: bool = True, jobs: int = 1) -> list[dict]:
    """Record every missing episode (``jobs`` at a time, in worker processes when more than one);
    return the index entries of all finished ones. Only this process writes the index."""
    todo = [(out, task, i, episode_seed(seed, task, i), settings) for task in tasks for i in range(episodes)
            if not (episode_dir(out, task, i) / "episode.json").is_file()]
    with (multiprocessing.get_context("spawn").Pool(jobs) if jobs > 1 and len(todo) > 1
          else contextlib.nullcontext()) as pool:
        finished = pool.imap_unordered(_record_job, todo) if pool else map(_record_job, todo)
        for _ in tqdm(finished, total=len(todo), desc="episodes", unit="ep", disable=not progress):
            write_index(out)
    return write_index(out)


def _record_job(job: tuple) -> None:
    _record_one(*job)


def _record_one(out: Path, task: str, index: int, seed: int, settings: EpisodeSettings) -> None:
    final = episode_dir(out, task, index)
    with directory_in_progress(final) as partial:
        summary, frames = record_episode(task, seed, settings, partial / "bag")
        summary.update(episode=index, bag=f"{task}/{final.name}/bag", frames_file=f"{task}/{final.name}/frames.npz")
        write_episode_files(partial, frames, summary)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--episodes", type=int, default=1, help="episodes per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--operator", choices=OPERATORS, default=EpisodeSettings.operator,
                        help="task: plans from the scene and does the task; synthetic: scripted, not object-aware")
    parser.add_argument("--scene-variation", action=argparse.BooleanOptionalAction, default=EpisodeSettings.scene_variation,
                        help="seeded object sizes/colours, distractors, table, lights, camera jitter")
    parser.add_argument("--duration", type=float, default=EpisodeSettings.duration_s,
                        help="seconds per episode (0: the task plan's length; synthetic: 4 s)")
    parser.add_argument("--fps", type=float, default=EpisodeSettings.fps)
    parser.add_argument("--jobs", type=int, default=1, help="episodes recorded in parallel processes")
    parser.add_argument("--width", type=int, default=EpisodeSettings.image_width)
    parser.add_argument("--height", type=int, default=EpisodeSettings.image_height)
    args = parser.parse_args(argv)
    settings = EpisodeSettings(operator=args.operator, scene_variation=args.scene_variation, duration_s=args.duration,
                               fps=args.fps, image_width=args.width, image_height=args.height)
    args.out.mkdir(parents=True, exist_ok=True)
    entries = generate(args.out, args.tasks, args.episodes, args.seed, settings, jobs=args.jobs)
    successes = sum(e["success"] for e in entries)
    print(f"{len(entries)} episodes in {args.out} ({successes} successful); index: {args.out / INDEX_NAME}")


if __name__ == "__main__":
    main()
