"""What the data is worth to a policy: success rate of LeRobot ACT policies trained on real, digital and
real + digital episodes, closed-loop on the simulated TIANJI M6, beside the paper's Table 3.

    .venv/bin/python benchmarks/bench_policy_transfer.py \\
        --policy real=outputs/policy/real digital=outputs/policy/digital real+digital=outputs/policy/both \\
        [--task block_pushing] [--trials 30]

Each policy runs ``--trials`` seeded trials (``rynn_world.policy.rollout``: scenes of the evaluation
run seed, never a training seed; the bridge's command path; the scene's own success check) and its
results are written to ``<policy>/evaluation_<task>.json``. ``scripts/policy_recipe.sh`` trains the
three policies and ends with this command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_retarget", "rynn_robot_bridge", "rynn_world_node")]

import rynn_robot_bridge.sim  # noqa: F401  (headless GL first)
from rynn_robot_bridge.sim.scenes import TASKS
from rynn_world.policy.__main__ import evaluate_policy
from rynn_world.policy.rollout import evaluation_seeds

# Table 3 of the paper (real robot, 35 trials per cell): (policy, data) -> success % per task in TASKS order.
PAPER_TABLE_3 = {
    ("DP", "300 real"): (82.86, 85.71, 88.57, 57.14),
    ("DP", "300 real + 300 generated"): (88.57, 88.57, 94.29, 65.71),
    ("pi0.5", "300 real"): (94.29, 100.00, 94.29, 42.86),
    ("pi0.5", "300 real + 300 generated"): (97.14, 97.14, 100.00, 62.86),
    ("pi0", "300 real"): (88.57, 94.29, 91.43, 34.29),
    ("pi0", "0 real + 300 generated"): (68.57, 82.86, 77.14, 28.57),
    ("pi0", "300 real + 300 generated"): (94.29, 100.00, 97.14, 54.29),
}


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return f"{cpu}, {os.cpu_count()} cores, load avg {os.getloadavg()[0]:.1f}, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", nargs="+", required=True, metavar="LABEL=DIR",
                        help="trained policy directories (python -m rynn_world.policy train), labelled by data source")
    parser.add_argument("--task", default="block_pushing", choices=TASKS)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--reuse", action="store_true",
                        help="take a policy's <policy>/evaluation_<task>.json when it holds these --trials seeds "
                             "(written by this script or python -m rynn_world.policy evaluate) instead of running them again")
    args = parser.parse_args(argv)
    policies = [tuple(item.split("=", 1)) for item in args.policy]
    if any(len(p) != 2 for p in policies):
        parser.error("--policy takes LABEL=DIR")
    print(f"machine: {machine()}")
    rows = []
    for label, directory in policies:
        print(f"== {label}: {directory}", flush=True)
        saved = Path(directory) / f"evaluation_{args.task}.json"
        summary = json.loads(saved.read_text()) if args.reuse and saved.is_file() else None
        if summary is None or [r["seed"] for r in summary["results"]] != evaluation_seeds(args.task, args.trials):
            summary = evaluate_policy(Path(directory), args.task, args.trials)
        else:
            print(f"  {args.trials} trials from {saved} ({summary['wall_s']:.0f} s when run)")
        training = summary["training"]
        rows.append((label, training["episodes"], training["steps_done"], training["duration_s"],
                     summary["successes"], summary["trials"]))
    column = TASKS.index(args.task)
    print(f"\nsimulated TIANJI M6, task {args.task}, {args.trials} seeded trials per policy (LeRobot ACT, CPU recipe)")
    print("| data source | episodes | training steps | training s | success | rate |\n| --- | --- | --- | --- | --- | --- |")
    for label, episodes, steps, seconds, successes, trials in rows:
        print(f"| {label} | {episodes} | {steps} | {seconds:.0f} | {successes}/{trials} | {100.0 * successes / trials:.1f} % |")
    print(f"\nthe paper's Table 3 (real robot, 35 trials), {args.task}:")
    print("| policy | data source | rate |\n| --- | --- | --- |")
    for (policy, data), rates in PAPER_TABLE_3.items():
        print(f"| {policy} | {data} | {rates[column]:.1f} % |")


if __name__ == "__main__":
    main()
