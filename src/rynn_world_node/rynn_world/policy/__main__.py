"""Policy learning on the project's data: ``python -m rynn_world.policy {train,evaluate} ...``.

    # train LeRobot's ACT on one or more LeRobot v3 datasets (the exporter's or the data engine's)
    python -m rynn_world.policy train --data data/policy/real_lerobot --out outputs/policy/real
    # closed-loop trials on the simulated robot, seeded, through the bridge's command path
    python -m rynn_world.policy evaluate --policy outputs/policy/real --task block_pushing --trials 30

docs/data_engine.md ("Policy learning") has the whole recipe, at the CPU size and at full size.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, fields
from pathlib import Path

from .train import FULL_SIZE, PolicySize, TrainSettings


def _add_dataclass_options(parser: argparse.ArgumentParser, cls, defaults) -> None:
    for f in fields(cls):
        value = getattr(defaults, f.name)
        option = "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(option, action=argparse.BooleanOptionalAction, default=value)
        else:
            parser.add_argument(option, type=type(value), default=value)


def _dataclass_from(cls, args):
    return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rynn_world.policy", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="train ACT on LeRobot v3 datasets")
    train.add_argument("--data", nargs="+", type=Path, required=True, help="LeRobot v3 dataset directories (joined)")
    train.add_argument("--limit", type=int, default=0, help="first N episodes of each dataset (0: all)")
    train.add_argument("--out", type=Path, required=True, help="new policy directory")
    train.add_argument("--full-size", action="store_true", help="LeRobot's ACT defaults (480x640, dim 512, chunk 100)")
    _add_dataclass_options(train, PolicySize, PolicySize())
    _add_dataclass_options(train, TrainSettings, TrainSettings())
    select = commands.add_parser("successful", help="a generator root of only the successful episodes (links)")
    select.add_argument("--episodes", type=Path, required=True, help="generator output (index.json)")
    select.add_argument("--out", type=Path, required=True)
    evaluate = commands.add_parser("evaluate", help="seeded closed-loop trials on the simulated robot")
    evaluate.add_argument("--policy", type=Path, required=True)
    evaluate.add_argument("--task", default="block_pushing")
    evaluate.add_argument("--trials", type=int, default=30)
    evaluate.add_argument("--out", type=Path, help="results JSON (default: <policy>/evaluation_<task>.json)")
    return parser


def run_train(args) -> dict:
    from .dataset import read_lerobot_dataset
    from .train import train_policy

    size = FULL_SIZE if args.full_size else _dataclass_from(PolicySize, args)
    episodes, sources = [], {}
    for root in args.data:
        read = read_lerobot_dataset(root, size.image_height, size.image_width, limit=args.limit)
        sources[str(root)] = len(read)
        episodes += read
    print(f"{len(episodes)} episodes, {sum(len(e.action) for e in episodes)} frames from {len(args.data)} dataset(s)")
    info = train_policy(episodes, args.out, size, _dataclass_from(TrainSettings, args), sources)
    print(f"trained {info['steps_done']} steps in {info['duration_s']:.0f} s -> {args.out}")
    return info


def link_successful(root: Path, out: Path) -> list[dict]:
    """``out`` as a generator root (episode directories linked, its own index.json) holding the episodes
    of ``root`` whose scene check succeeded: demonstrations, not the task operator's failures."""
    import os

    from rynn_robot_bridge.episodes.layout import episode_dir, write_index

    for entry in json.loads((Path(root) / "index.json").read_text())["episodes"]:
        link = episode_dir(Path(out), entry["task"], entry["episode"])
        if entry["success"] and not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(episode_dir(Path(root), entry["task"], entry["episode"]), link.parent), link)
    return write_index(Path(out))


def evaluate_policy(policy_dir: Path, task: str, trials: int, progress=print) -> dict:
    """``trials`` seeded trials; the results JSON (also written to ``<policy>/evaluation_<task>.json``)."""
    from .rollout import evaluation_seeds, run_trial
    from .train import load_policy

    policy = load_policy(policy_dir)
    started, results = time.monotonic(), []
    for i, seed in enumerate(evaluation_seeds(task, trials)):
        result = run_trial(policy, task, seed)
        results.append({k: v for k, v in asdict(result).items() if k != "images"})
        progress(f"  {task} trial {i} (seed {seed}): {'success' if result.success else 'failure'} "
                 f"({result.cpu_s:.1f} CPU-s)")
    summary = {"policy": str(policy_dir), "task": task, "trials": trials,
               "successes": sum(r["success"] for r in results), "wall_s": round(time.monotonic() - started, 1),
               "training": {k: policy.info[k] for k in ("sources", "episodes", "steps_done", "duration_s")},
               "results": results}
    (Path(policy_dir) / f"evaluation_{task}.json").write_text(json.dumps(summary, indent=2))
    return summary


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.command == "successful":
        entries = link_successful(args.episodes, args.out)
        print(f"{len(entries)} successful episodes linked in {args.out}")
    elif args.command == "train":
        if args.out.exists() and any(args.out.iterdir()):
            sys.exit(f"{args.out} is not empty; train into a new directory")
        run_train(args)
    else:
        summary = evaluate_policy(args.policy, args.task, args.trials)
        if args.out:
            args.out.write_text(json.dumps(summary, indent=2))
        print(f"{args.task}: {summary['successes']}/{args.trials} successful "
              f"({100.0 * summary['successes'] / args.trials:.1f} %)")


if __name__ == "__main__":
    main()
