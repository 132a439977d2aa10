#!/usr/bin/env python3
"""Which frame may a digital-mode re-anchor use? Held-out episodes, the shipped model, side by side.

In digital mode the real robot holds its pose, so its camera shows the pose at the switch, not the
commanded motion. Each held-out episode (the real robot executed its controls) is streamed from its
first frame, as after a real -> digital switch, through ``evaluation.generation.stream_clip`` (the
live node's path), with these re-anchor policies:

- ``none``: never re-anchor (the KV window bounds the context anyway);
- ``generated@N``: every N frames on the last generated frame (what the model does by itself);
- ``held@N``: every N frames on the frame the held real robot shows (the first frame; the old bug);
- ``executed@N``: every N frames on the episode's real frame at that instant (the paper's protocol,
  possible only when the real robot executed the actions: an upper bound, not a live option).

Printed: PSNR against the real frames per second of the episode and overall, SSIM overall, and the
jump at the first re-anchor (mean absolute change between the frames on either side of it, divided
by the median change between consecutive frames: 1 = an ordinary frame step).

    nice -n 10 .venv/bin/python benchmarks/bench_reanchor_policy.py [--every 33] [--data data/sim_episodes_208x128]
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src" / p) for p in ("rynn_common", "rynn_world_node")]

from rynn_world.checkpoints import packaged_checkpoint
from rynn_world.evaluation.generation import stream_clip
from rynn_world.evaluation.metrics import psnr, ssim
from rynn_world.model.configs import get_config
from rynn_world.training.config import DataConfig
from rynn_world.training.datasets import build_clip_dataset
from rynn_world.training.export import load_or_build_transformer, load_vae


def policies(every: int, clip) -> dict:
    """name -> (reanchor_every, anchor_frames) for stream_clip."""
    held = np.repeat(clip.reference[None], len(clip.frames), axis=0)
    return {"none": (None, None), f"generated@{every}": (every, None), f"generated@{(every - 1) // 2 + 1}": ((every - 1) // 2 + 1, None),
            f"held@{every}": (every, held), f"executed@{every}": (every, clip.frames)}


def jump(video: np.ndarray, index: int) -> float:
    """Change from frame ``index - 1`` to ``index`` over the median consecutive change (video: frames 1..)."""
    steps = np.abs(np.diff(video.astype(np.float32), axis=0)).mean(axis=(1, 2, 3))
    return float(steps[index - 2] / max(np.median(steps), 1e-6))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="data/sim_episodes_208x128")
    parser.add_argument("--episodes", type=int, nargs="+", default=[4, 12], help="the held-out episodes (MODEL_CARD.md)")
    parser.add_argument("--every", type=int, default=33)
    parser.add_argument("--frames", type=int, default=61, help="frames per clip, the reference included (1 + 4k; the episodes hold 64)")
    parser.add_argument("--model", default="embedded_cpu")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = get_config(args.model)
    checkpoint = packaged_checkpoint(args.model)
    if checkpoint is None:
        sys.exit(f"no packaged checkpoint for {args.model}")
    vae, transformer = load_vae(config, str(checkpoint)), load_or_build_transformer(config, str(checkpoint)).eval()
    clips = build_clip_dataset(DataConfig(root=args.data, clip_frames=args.frames, stride=args.frames, episodes=args.episodes),
                               config)
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; model {args.model} ({checkpoint}); "
          f"{len(clips)} clips of {args.frames} frames", flush=True)
    fps = int(config.fps)
    seconds = [(max(1, s * fps), (s + 1) * fps) for s in range((args.frames - 1) // fps + 1)]
    results: dict[str, dict[str, list]] = {}
    started = time.monotonic()
    for n in range(len(clips)):
        clip = clips[n]
        truth = clip.frames[1:]
        videos = {"copy_reference": np.repeat(clip.reference[None], len(truth), axis=0)}
        for name, (every, anchors) in policies(args.every, clip).items():
            videos[name] = stream_clip(transformer, vae, config, clip.reference, clip.skeleton, n, every, anchors)
        for name, video in videos.items():
            row = results.setdefault(name, {"psnr": [], "ssim": [], "seconds": [], "jump": []})
            row["psnr"].append(psnr(video, truth))
            row["ssim"].append(ssim(video, truth))
            row["seconds"].append([psnr(video[a - 1:b - 1], truth[a - 1:b - 1]) for a, b in seconds if a - 1 < len(truth)])
            row["jump"].append(jump(video, args.every) if args.every < len(video) else float("nan"))
        print(f"  {clip.source_id}: {time.monotonic() - started:.0f} s", flush=True)
    header = " | ".join(f"PSNR {a / fps:.0f}-{b / fps:.0f} s" for a, b in seconds)
    print(f"\n| policy | PSNR all | SSIM all | {header} | jump at frame {args.every} |")
    print("|---|---|---|" + "---|" * len(seconds) + "---|")
    for name, row in results.items():
        per_second = " | ".join(f"{v:.2f}" for v in np.mean(row["seconds"], axis=0))
        print(f"| {name} | {np.mean(row['psnr']):.2f} | {np.mean(row['ssim']):.3f} | {per_second} | {np.mean(row['jump']):.2f} |")


if __name__ == "__main__":
    main()
