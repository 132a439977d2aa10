"""How well VAEs reconstruct held-out episode clips: the ceiling of any world model decoded by them.

A DiT trained on a VAE's latents cannot score above that VAE's own reconstruction of the frames, so
this is the first figure to read when a model stalls below copy-the-reference. Clips are encoded and
decoded as the evaluation decodes (streaming, the model's path); PSNR against the recorded frames.
`--served` also scores frames 1.. of each reconstruction composited on the clip's reference as the node
serves them (rynn_world.compositing), PSNR and SSIM next to copying the reference: the ceiling of the
served scores a perfect DiT on that VAE would reach. `--json FILE` writes the figures for the model card
(`rynn_world.training.package_default --decoder ... --ceiling FILE`).

    .venv/bin/python benchmarks/bench_vae_reconstruction.py --data data/task_episodes_208x128 --episodes 4 12 15 \
        --checkpoint outputs/embedded_cpu/vae/final outputs/embedded_cpu/vae_tasks/final
"""

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from rynn_world.data.latent_cache import encode_clip
from rynn_world.evaluation.generation import composite_clip, decode, method_video
from rynn_world.evaluation.metrics import psnr, ssim
from rynn_world.model.configs import get_config
from rynn_world.training.config import DataConfig
from rynn_world.training.datasets import build_clip_dataset
from rynn_world.training.export import load_vae


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", nargs="+", required=True, help="directories with vae/")
    parser.add_argument("--data", default="data/task_episodes_208x128")
    parser.add_argument("--episodes", nargs="+", type=int, default=[4, 12, 15])
    parser.add_argument("--stride", type=int, default=48)
    parser.add_argument("--model", default="embedded_cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--served", action="store_true", help="also the reconstructions composited on the reference")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = get_config(args.model)
    clips = build_clip_dataset(DataConfig(kind="robot_episodes", root=args.data, clip_frames=17, stride=args.stride,
                                          episodes=args.episodes), config)
    print(f"{len(clips)} clips of 17 frames from episodes {args.episodes} of {args.data}")
    report = {"data": args.data, "episodes": args.episodes, "stride": args.stride, "clips": len(clips), "checkpoints": {}}
    if args.served:
        copies = []
        for i in range(len(clips)):
            clip = clips[i]
            copied = method_video("copy_reference", None, None, config, clip, clip, 0, 0, None)
            copies.append((psnr(copied, clip.frames[1:]), ssim(copied, clip.frames[1:])))
        report["copy_reference"] = {"psnr": float(np.mean([p for p, _ in copies])), "ssim": float(np.mean([s for _, s in copies]))}
        print(f"copy the reference (frames 1..): PSNR {report['copy_reference']['psnr']:.2f} dB, "
              f"SSIM {report['copy_reference']['ssim']:.3f}")
    for checkpoint in args.checkpoint:
        vae = load_vae(config, checkpoint)
        scores, served = [], []
        for i in tqdm(range(len(clips)), desc=checkpoint, leave=False):
            clip = clips[i]
            frames = decode(vae, encode_clip(vae, clip)["latents"][None])
            scores.append(psnr(frames, clip.frames))
            if args.served:
                composited = composite_clip(config, clip.reference, clip.skeleton[1:], frames[1:], static_camera=True)
                served.append((psnr(composited, clip.frames[1:]), ssim(composited, clip.frames[1:])))
        figures = report["checkpoints"][checkpoint] = {"reconstruction_psnr": float(np.mean(scores))}
        print(f"{checkpoint}: reconstruction PSNR mean {np.mean(scores):.2f} dB "
              f"(min {np.min(scores):.2f}, max {np.max(scores):.2f})")
        if served:
            figures |= {"served_psnr": float(np.mean([p for p, _ in served])), "served_ssim": float(np.mean([s for _, s in served]))}
            print(f"{checkpoint}: served (composited) PSNR {figures['served_psnr']:.2f} dB, SSIM {figures['served_ssim']:.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
