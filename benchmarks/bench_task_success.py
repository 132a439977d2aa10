"""Task operator success rate per task over N seeded episodes (issue 15 goal: >= 60 % on each task).

    .venv/bin/python benchmarks/bench_task_success.py [--episodes 50] [--seed 0] [--tasks ...] [--jobs 1]

Each episode is exactly what the generator records (``rynn_world.episodes.rollout.record_episode``
with the task operator: trackers and gloves -> retargeting -> Ruckig -> simulated robot), seeded like
``generate`` seeds it; success is the scene's own check at the end (for dual picking it includes that
each fruit was picked: held in the air by the robot, ``rynn_robot_bridge.sim.holds``; each episode's line
says how long and how high). Images are rendered small and
rarely (they do not touch the physics) and the bags go to a temporary directory.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_retarget", "rynn_robot_bridge")]

import rynn_robot_bridge.sim  # noqa: F401  (headless GL first)
from rynn_robot_bridge.sim.scenes import TASKS
from rynn_world.episodes.rollout import EpisodeSettings, episode_seed, record_episode

SETTINGS = EpisodeSettings(operator="task", fps=1.0, image_width=64, image_height=48)


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return f"{cpu}, {os.cpu_count()} cores, load avg {os.getloadavg()[0]:.1f}, Python {platform.python_version()}"


def run_episode(job: tuple[str, int, int]) -> tuple[str, int, bool, float, dict]:
    task, index, seed = job
    started = time.process_time()
    with tempfile.TemporaryDirectory() as directory:
        summary, _ = record_episode(task, seed, SETTINGS, Path(directory) / "bag")
    return task, index, summary["success"], time.process_time() - started, summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=50, help="episodes per task")
    parser.add_argument("--seed", type=int, default=0, help="run seed, as generate --seed")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--jobs", type=int, default=1, help="episodes run in parallel processes")
    args = parser.parse_args(argv)
    print(f"machine: {machine()}")
    print(f"{args.episodes} episodes per task, seed {args.seed}, {args.jobs} process(es)")
    # episode-major: a run cut short still has episodes of every task
    jobs = [(task, i, episode_seed(args.seed, task, i)) for i in range(args.episodes) for task in args.tasks]
    results: dict[str, list[bool]] = {task: [] for task in args.tasks}
    cpu: dict[str, float] = {task: 0.0 for task in args.tasks}
    with multiprocessing.get_context("spawn").Pool(args.jobs) if args.jobs > 1 else _Serial() as pool:
        for task, index, success, seconds, summary in pool.imap_unordered(run_episode, jobs):
            results[task].append(success)
            cpu[task] += seconds
            counters = summary["retarget_counters"]
            unreachable = counters.get("unreachable_left", 0) + counters.get("unreachable_right", 0)
            holds = "".join(f", {name} held {hold['held_s']:.2f} s raised {100 * hold['raised_m']:.1f} cm"
                            for name, hold in summary["holds"].items())
            trouble = "".join(f", {what}: {summary[key]}" for key, what in
                              (("objects_off_table", "off the table"), ("physics_warnings", "MuJoCo warnings"))
                              if summary[key])
            print(f"  {task} episode {index}: {'success' if success else 'failure'} "
                  f"({seconds:.1f} CPU-s, {unreachable} unreachable IK targets{holds}{trouble})", flush=True)
    print("\n| task | success | rate | CPU-s / episode |\n| --- | --- | --- | --- |")
    for task in args.tasks:
        done = results[task]
        print(f"| {task} | {sum(done)}/{len(done)} | {100.0 * sum(done) / len(done):.0f} % | "
              f"{cpu[task] / len(done):.1f} |")


class _Serial:
    """The pool interface, in this process (``--jobs 1``)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    @staticmethod
    def imap_unordered(function, jobs):
        return map(function, jobs)


if __name__ == "__main__":
    main()
