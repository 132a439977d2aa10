"""Recorded episodes -> world-model training clips, in the paired-episode generator's layout.

``python -m rynn_robot_bridge.export.clips --bags DIR... --out DIR --fps 16``

Per episode ``<out>/<task>/episode_NNNN/`` with ``bag/`` (rosbag2 MCAP written by
the generator's own ``EpisodeBagWriter``: one camera frame, CameraInfo,
skeleton, action and joint state per clip frame, plus the first frame as the
reference image), ``frames.npz`` (the generator's frame-aligned arrays) and
``episode.json``; ``<out>/index.json`` comes from the episode layout's
``write_index`` (``episodes.layout``). Bags keep the recorder's topics (the one episode schema); what
the export adds for real data is the fixed frame clock, the skipped bad
messages and a CameraInfo check. The training readers
(rynn_world.data.robot_episodes) therefore take recorded and generated
episodes alike; the skeleton (with its elbows) is the retargeter's
/rynn/operator/skeleton_camera message as recorded.
Re-running skips bags already exported (recognised by their sha256, so a moved bag is still known).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from rynn_common.directories import directory_in_progress
from rynn_robot_bridge.episodes.bag_writer import EpisodeBagWriter
from rynn_robot_bridge.episodes.layout import INDEX_NAME, episode_dir, write_episode_files, write_index
from rynn_robot_bridge.export.bag_episode import AlignedEpisode, EpisodeExportError, ExportTopics, bag_sha256, find_bags, load_episode


def task_dir_name(task: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", task.lower()).strip("_") or "untitled"


def write_clip_bag(path: Path, episode: AlignedEpisode, summary: dict) -> dict[str, np.ndarray]:
    """The clip's bag, frame by frame; returns the frames.npz arrays (stamps from 0, as the generator's)."""
    intrinsics = episode.intrinsics
    if intrinsics is None:
        raise EpisodeExportError(f"{episode.bag}: no CameraInfo, needed to render the operator skeleton in the image")
    if (intrinsics.height, intrinsics.width) != episode.image_shape[:2]:
        raise EpisodeExportError(f"{episode.bag}: CameraInfo is {intrinsics.width}x{intrinsics.height}, "
                                 f"images are {episode.image_shape[1]}x{episode.image_shape[0]}")
    stamps = episode.stamp_ns - episode.stamp_ns[0]
    zeros = np.zeros(episode.state.shape[1])
    writer = EpisodeBagWriter(path, intrinsics)
    for k, rgb in enumerate(episode.frames()):
        if k == 0:
            writer.write_reference_image(rgb, 0)
        stamp = int(stamps[k])
        writer.write_frame(rgb, stamp)
        writer.write_skeleton(episode.skeleton_points[k], episode.skeleton_valid[k], episode.skeleton_elbows[k], stamp)
        writer.write_action(episode.action[k], stamp)
        writer.write_joint_state(episode.state[k], zeros, zeros, stamp)
    writer.write_episode_summary(summary, int(stamps[-1]))
    writer.close({"task": summary["task"], "mode": summary["mode"], "source_bag": summary["source_bag"]})
    return {
        "stamp_ns": stamps,
        "action": episode.action,
        "joint_position": episode.state,
    }


def write_clip(out: Path, episode: AlignedEpisode, task: str, source_sha256: str) -> dict:
    """One clip directory, built as ``.partial`` and renamed into place (a crash leaves no half clip)."""
    task_name = task_dir_name(task)
    existing = [int(p.name.split("_")[1]) for p in (out / task_name).glob("episode_[0-9][0-9][0-9][0-9]")]
    index = max(existing, default=-1) + 1
    final = episode_dir(out, task_name, index)
    with directory_in_progress(final) as partial:
        height, width = episode.image_shape[:2]
        summary = {
            "task": task_name, "task_text": task, "episode": index, "seed": None, "success": None,
            "frames": episode.length, "duration_s": episode.length / episode.fps, "fps": episode.fps,
            "image_width": width, "image_height": height, "source": "recorded", "mode": episode.mode_label,
            "operator_id": episode.metadata.get("operator_id", ""), "source_bag": episode.bag.name,
            "source_bag_sha256": source_sha256,
            "bag": f"{task_name}/{final.name}/bag",
            "frames_file": f"{task_name}/{final.name}/frames.npz",
            "robot_description_sha256": episode.metadata.get("robot_description_sha256", ""),
            "world_model_checkpoint_sha256": episode.metadata.get("world_model_checkpoint_sha256", ""),
            "skipped_messages": dict(episode.skipped),
        }
        write_episode_files(partial, write_clip_bag(partial / "bag", episode, summary), summary)
    return summary


def export_clips(bags: list[Path], out: Path, fps: float = 16.0, topics: ExportTopics = ExportTopics(),
                 task: str = "teleoperation", progress: bool = True) -> tuple[list[dict], dict[str, str]]:
    """Export every bag not yet in ``out``; returns (index entries, {bag: reason} for the ones skipped)."""
    out.mkdir(parents=True, exist_ok=True)
    done = {e.get("source_bag_sha256") for e in (write_index(out) if any(out.iterdir()) else [])}
    skipped: dict[str, str] = {}
    for bag in tqdm(find_bags(bags), desc="clips", unit="ep", disable=not progress):
        try:
            source_sha256 = bag_sha256(bag)
            if source_sha256 in done:
                continue
            episode = load_episode(bag, fps, topics, with_skeleton=True)
            write_clip(out, episode, episode.metadata.get("task") or task, source_sha256)
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
