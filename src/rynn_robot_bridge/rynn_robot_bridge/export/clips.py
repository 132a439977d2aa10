"""Recorded episodes -> world-model training clips, in the paired-episode generator's layout.

``python -m rynn_robot_bridge.export.clips --bags DIR... --out DIR --fps 16``

Per episode ``<out>/<task>/episode_NNNN/frames.npz`` with the generator's arrays
(``stamp_ns``, ``action``, ``joint_position``, ``skeleton_uvd``,
``skeleton_valid``) plus ``rgb`` (N, H, W, 3) uint8 camera frames, and
``episode.json``; ``<out>/index.json`` lists them all (the generator's own
``write_index``), so the training readers take recorded and generated episodes
alike. The skeleton is the retargeter's /rynn/operator/skeleton_camera projected
with the bag's CameraInfo. Re-running skips bags already exported.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from rynn_robot_bridge.episodes.bag_writer import skeleton_pixels
from rynn_robot_bridge.episodes.generate import INDEX_NAME, episode_dir, write_index
from rynn_robot_bridge.export.bag_episode import AlignedEpisode, EpisodeExportError, ExportTopics, find_bags, load_episode


def task_dir_name(task: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", task.lower()).strip("_") or "untitled"


def clip_arrays(episode: AlignedEpisode) -> dict[str, np.ndarray]:
    if episode.intrinsics is None:
        raise EpisodeExportError(f"{episode.bag}: no CameraInfo, needed to project the operator skeleton into the image")
    uvd = np.stack([skeleton_pixels(points, episode.intrinsics) for points in episode.skeleton_points])
    return {
        "stamp_ns": episode.stamp_ns - episode.stamp_ns[0],
        "action": episode.action,
        "joint_position": episode.state,
        "skeleton_uvd": uvd,
        "skeleton_valid": episode.skeleton_valid.astype(bool),
        "rgb": np.stack(list(episode.frames())),
    }


def write_clip(out: Path, episode: AlignedEpisode, task: str) -> dict:
    """One clip directory, built as ``.partial`` and renamed into place (a crash leaves no half clip)."""
    task_name = task_dir_name(task)
    existing = [int(p.name.split("_")[1]) for p in (out / task_name).glob("episode_[0-9][0-9][0-9][0-9]")]
    index = max(existing, default=-1) + 1
    final = episode_dir(out, task_name, index)
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        arrays = clip_arrays(episode)
        np.savez(partial / "frames.npz", **arrays)
        height, width = episode.image_shape[:2]
        summary = {
            "task": task_name, "task_text": task, "episode": index, "seed": None, "success": None,
            "frames": episode.length, "duration_s": episode.length / episode.fps, "fps": episode.fps,
            "image_width": width, "image_height": height, "source": "recorded", "mode": episode.mode_label,
            "operator_id": episode.metadata.get("operator_id", ""), "source_bag": str(episode.bag.resolve()),
            "bag": os.path.relpath(episode.bag.resolve(), out.resolve()),
            "frames_file": f"{task_name}/{final.name}/frames.npz",
            "robot_description_sha256": episode.metadata.get("robot_description_sha256", ""),
            "world_model_checkpoint_sha256": episode.metadata.get("world_model_checkpoint_sha256", ""),
            "skipped_messages": dict(episode.skipped),
        }
        (partial / "episode.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
        os.replace(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return summary


def export_clips(bags: list[Path], out: Path, fps: float = 16.0, topics: ExportTopics = ExportTopics(),
                 task: str = "teleoperation", progress: bool = True) -> tuple[list[dict], dict[str, str]]:
    """Export every bag not yet in ``out``; returns (index entries, {bag: reason} for the ones skipped)."""
    out.mkdir(parents=True, exist_ok=True)
    done = {e.get("source_bag") for e in (write_index(out) if any(out.iterdir()) else [])}
    skipped: dict[str, str] = {}
    for bag in tqdm(find_bags(bags), desc="clips", unit="ep", disable=not progress):
        if str(bag.resolve()) in done:
            continue
        try:
            episode = load_episode(bag, fps, topics, with_skeleton=True)
            write_clip(out, episode, episode.metadata.get("task") or task)
        except EpisodeExportError as exc:
            skipped[str(bag)] = str(exc)
            tqdm.write(f"skipped {bag}: {exc}")
    return write_index(out), skipped


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bags", nargs="+", type=Path, required=True, help="episode bags or directories of them")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--fps", type=float, default=16.0)
    parser.add_argument("--task", default="teleoperation", help="task of bags whose metadata names none")
    args = parser.parse_args(argv)
    try:
        entries, skipped = export_clips(args.bags, args.out, args.fps, task=args.task)
    except EpisodeExportError as exc:
        sys.exit(f"export failed: {exc}")
    print(f"{len(entries)} clips in {args.out} (index: {args.out / INDEX_NAME})" + (f"; {len(skipped)} skipped" if skipped else ""))


if __name__ == "__main__":
    main()
