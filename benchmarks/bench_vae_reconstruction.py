"""How well VAEs reconstruct held-out episode clips: the ceiling of any world model decoded by them.

A DiT trained on a VAE's latents cannot score above that VAE's own reconstruction of the frames, so
this is the first figure to read when a model stalls below copy-the-reference. Clips are encoded and
decoded as the evaluation decodes (streaming, the model's path); PSNR against the recorded frames.

    .venv/bin/python benchmarks/bench_vae_reconstruction.py --data data/task_episodes_208x128 --episodes 4 12 15 \
        --checkpoint outputs/embedded_cpu/vae/final outputs/embedded_cpu/vae_tasks/final
"""

import argparse

import numpy as np
import torch
from tqdm import tqdm

from rynn_world.data.latent_cache import encode_clip
from rynn_world.evaluation.generation import decode
from rynn_world.evaluation.metrics import psnr
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
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = get_config(args.model)
    clips = build_clip_dataset(DataConfig(kind="robot_episodes", root=args.data, clip_frames=17, stride=args.stride,
                                          episodes=args.episodes), config)
    print(f"{len(clips)} clips of 17 frames from episodes {args.episodes} of {args.data}")
    for checkpoint in args.checkpoint:
        vae = load_vae(config, checkpoint)
        scores = [psnr(decode(vae, encode_clip(vae, clips[i])["latents"][None]), clips[i].frames)
                  for i in tqdm(range(len(clips)), desc=checkpoint, leave=False)]
        print(f"{checkpoint}: reconstruction PSNR mean {np.mean(scores):.2f} dB "
              f"(min {np.min(scores):.2f}, max {np.max(scores):.2f})")


if __name__ == "__main__":
    main()
