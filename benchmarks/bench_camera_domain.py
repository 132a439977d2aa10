#!/usr/bin/env python3
"""Does the live camera path show the world model what it was trained on?

Training episodes render the simulated head camera natively at the model's size (208x128,
``episodes.generate --width --height``); live, the camera streams 640x480 (320x240 in
bench_ab_fidelity) and the world model's ``to_model_rgb`` resizes it. Each task scene at rest is
rendered both ways and the resized frame scored against the native one (PSNR/SSIM, the
evaluation's metrics). High figures mean the image domain is not what separates live from held-out
scores.

    .venv/bin/python benchmarks/bench_camera_domain.py [--sizes 640x480 320x240] [--seed 6]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_retarget", "rynn_robot_bridge", "rynn_world_node")]

import rynn_robot_bridge.sim  # noqa: F401  (headless GL first)
from rynn_common.description import D435I_COLOR
from rynn_robot_bridge.sim.scenes import TASKS
from rynn_robot_bridge.sim.simulator import SimulatedRobot
from rynn_world.evaluation.metrics import psnr, ssim
from rynn_world.image_input import to_model_rgb
from rynn_world.model.configs import get_config


def render(task: str, seed: int, width: int, height: int):
    robot = SimulatedRobot(task, seed=seed, camera=D435I_COLOR.scaled(width, height), vary_scene=False)
    try:
        return robot.render()
    finally:
        robot.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["640x480", "320x240"], help="live camera sizes, WxH")
    parser.add_argument("--seed", type=int, default=6, help="scene seed (the default model's data seed)")
    parser.add_argument("--model", default="embedded_cpu")
    options = parser.parse_args()
    config = get_config(options.model)
    print(f"{'task':<18}{'live camera':>12}{'PSNR dB':>9}{'SSIM':>7}   (resized by to_model_rgb vs native "
          f"{config.width}x{config.height})")
    for task in TASKS:
        native = render(task, options.seed, config.width, config.height)
        for size in options.sizes:
            width, height = (int(v) for v in size.split("x"))
            live = to_model_rgb(render(task, options.seed, width, height), config.height, config.width)
            print(f"{task:<18}{size:>12}{psnr(live[None], native[None]):>9.2f}{ssim(live[None], native[None]):>7.3f}")


if __name__ == "__main__":
    main()
