"""The model-size / speed frontier: held-out quality against the graph's digital frame rate, one
point per transformer variant (a depth, a patch size, or the same model trained on more data), as a plot
and a model-card section.

A variant measured here is a directory holding its checkpoint (transformer/ ...), its served evaluations
on task and on synthetic clips (evaluation.evaluate's results.json) and the graph benchmark's figures
(benchmarks/bench_digital_latency.py --digital-only --json, one or more graph*.json: the variants' graph
runs alternate, so a machine that slows down mid-way slows every variant alike):

    python -m rynn_world.evaluation.frontier --variant NAME DIR [--variant NAME DIR ...] --out DIR [--card CHECKPOINT_DIR]
        [--verdict TEXT]

DIR/tasks/results.json, DIR/sim/results.json, DIR/graph*.json; the transformer's depth, patch and size are
read from DIR/checkpoint/transformer. Each point's figures are kept in POINTS (frontier.json) beside the
plot: with --card, the card's earlier points stay on the frontier (a variant of the same name is replaced),
so a new variant is measured without training the others again.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..demo import DIGITAL_FPS_FLOOR
from ..training.package_default import write_card_section

SECTION = "## Model-size / speed frontier"
PLOT = "frontier.png"
POINTS = "frontier.json"
METHOD = "student_no_dmd"


@dataclass
class Variant:
    """One point: the figures of the card's table, and when they were measured."""

    name: str
    blocks: int
    patch: list[int]
    parameters: int
    measured: str  # the date of the evaluations and graph runs
    task: dict  # psnr, ssim, copy_psnr, copy_ssim, grounding, interaction, copy_interaction (served, task clips)
    sim: dict  # psnr, ssim, copy_psnr, copy_ssim (served, synthetic clips)
    fps: list[float]  # the digital canonical FPS in the recording graph: median, lowest, highest of the starts
    age_p50: float  # the frame age's median, ms (median of the starts)
    world_model_cpu: float  # the world-model process, % of a core (median of the starts)

    def gain(self, part: str) -> float:
        scores = getattr(self, part)
        return scores["psnr"] - scores["copy_psnr"]


def _transformer_size(checkpoint: Path) -> tuple[int, list[int], int]:
    from safetensors import safe_open

    config = json.loads((checkpoint / "transformer" / "config.json").read_text())
    count = 0
    for weights in (checkpoint / "transformer").glob("*.safetensors"):
        with safe_open(str(weights), "pt") as f:
            count += sum(int(np.prod(f.get_slice(k).get_shape())) for k in f.keys())
    return int(config["num_layers"]), list(config["patch_size"]), count


def _scores(summary: dict) -> dict:
    methods = summary["methods"]
    ours, copy = methods[METHOD]["all"], methods["copy_reference"]["all"]
    scores = {"psnr": ours["psnr"], "ssim": ours["ssim"], "copy_psnr": copy["psnr"], "copy_ssim": copy["ssim"],
              "grounding": summary["grounding"]["all"]["psnr_gap"]}
    interaction = summary.get("interaction", {}).get("all", {})
    if interaction:
        scores |= {"interaction": interaction[METHOD], "copy_interaction": interaction["copy_reference"]}
    return scores


def load_variant(name: str, directory: Path) -> Variant:
    blocks, patch, parameters = _transformer_size(directory / "checkpoint")
    graphs = sorted(directory.glob("graph*.json"))
    if not graphs:
        raise FileNotFoundError(f"{directory}: no graph*.json (benchmarks/bench_digital_latency.py --digital-only --json)")
    digital = [window for path in graphs for run in json.loads(path.read_text())["runs"] for window in run
               if window["mode"] == "digital"]
    fps = [window["fps"] for window in digital]
    read = lambda part: json.loads((directory / part / "results.json").read_text())["summary"]  # noqa: E731
    measured = datetime.date.fromtimestamp(max(path.stat().st_mtime for path in graphs)).isoformat()
    return Variant(name, blocks, patch, parameters, measured, _scores(read("tasks")), _scores(read("sim")),
                   [float(np.median(fps)), min(fps), max(fps)],
                   float(np.median([window["age_p50"] for window in digital])),
                   float(np.median([window["cpu"].get("world_model_node", np.nan) for window in digital])))


def read_points(path: Path) -> list[Variant]:
    return [Variant(**point) for point in json.loads(path.read_text())] if path.is_file() else []


def write_points(variants: list[Variant], path: Path) -> None:
    path.write_text(json.dumps([dataclasses.asdict(v) for v in variants], indent=1) + "\n")


def plot(variants: list[Variant], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    for axis, (part, title) in zip(axes, (("task", "task clips (held-out seed)"), ("sim", "synthetic clips"))):
        fps = [v.fps[0] for v in variants]
        gains = [v.gain(part) for v in variants]
        for v, x, y in zip(variants, fps, gains):  # named in the legend: neighbours sit a few tenths apart
            axis.scatter(x, y, s=40 + v.parameters / 2e4, label=f"{v.name} ({v.parameters / 1e6:.2f} M)")
        axis.axvline(DIGITAL_FPS_FLOOR, color="grey", linestyle="--", linewidth=1, label=f"{DIGITAL_FPS_FLOOR:g} FPS floor")
        axis.axhline(2.0, color="tab:red", linestyle=":", linewidth=1, label="goal: copy + 2 dB")
        axis.set_xlim(min(fps + [DIGITAL_FPS_FLOOR]) - 0.5, max(fps + [16.0]) + 0.5)
        axis.set_ylim(min(gains + [0.0]) - 0.2, max(gains + [2.0]) + 0.3)
        axis.set_xlabel("digital canonical FPS in the recording graph (median of starts)")
        axis.set_ylabel("served PSNR over copying the reference (dB)")
        axis.set_title(title)
        axis.grid(alpha=0.3)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=8)  # one, under both
    fig.tight_layout(rect=(0, 0.1, 1, 1))  # room for the legend
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _against_copy(scores: dict) -> str:
    """PSNR / SSIM of the method over all clips, copying the reference's in brackets."""
    return f"{scores['psnr']:.2f} / {scores['ssim']:.3f} ({scores['copy_psnr']:.2f} / {scores['copy_ssim']:.3f})"


def table(variants: list[Variant]) -> str:
    lines = ["| variant | blocks | patch | parameters | task PSNR / SSIM (copy) | task grounding | task interaction (copy) "
             "| synthetic PSNR / SSIM (copy) | graph FPS (range) | frame age p50 (ms) | world model CPU (% of a core) "
             "| measured |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for v in variants:
        median, low, high = v.fps
        lines.append(
            f"| {v.name} | {v.blocks} | {'x'.join(map(str, v.patch[1:]))} | {v.parameters / 1e6:.2f} M "
            f"| {_against_copy(v.task)} | {v.task['grounding']:+.2f} "
            f"| {v.task.get('interaction', float('nan')):.2f} ({v.task.get('copy_interaction', float('nan')):.2f}) "
            f"| {_against_copy(v.sim)} | {median:.1f} ({low:.1f}-{high:.1f}) "
            f"| {v.age_p50:.0f} | {v.world_model_cpu:.0f} | {v.measured} |")
    return "\n".join(lines)


def section(variants: list[Variant], recipe: str, verdict: str = "") -> str:
    return f"""{SECTION}
Transformer variants trained the same way (the same fine-tune steps from the packaged transformer; on the shipped
fine-tune's data unless the name says otherwise; the patch is the DiT's latent cells per token, height x width),
each scored served on the held-out clips and run in the default recording graph
(`benchmarks/bench_digital_latency.py --digital-only`, median of the graph starts).
Recipe: `{recipe}`.

{table(variants)}

![served PSNR over copying against the graph's digital FPS]({PLOT})
{f"{chr(10)}{verdict.strip()}{chr(10)}" if verdict else ""}"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", nargs=2, action="append", required=True, metavar=("NAME", "DIR"))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--card", type=Path, help="a packaged checkpoint whose model card gets the section and plot")
    parser.add_argument("--recipe", default="scripts/train_frontier.sh")
    parser.add_argument("--verdict", default="", help="what ships and why, written under the plot")
    args = parser.parse_args(argv)
    measured = [load_variant(name, Path(directory)) for name, directory in args.variant]
    names = {v.name for v in measured}
    kept = [v for v in read_points(args.card / POINTS) if v.name not in names] if args.card else []
    variants = kept + measured
    args.out.mkdir(parents=True, exist_ok=True)
    plot(variants, args.out / PLOT)
    write_points(variants, args.out / POINTS)
    text = section(variants, args.recipe, args.verdict)
    (args.out / "frontier.md").write_text(text)
    print(text)
    if args.card:
        for name in (PLOT, POINTS):
            shutil.copy(args.out / name, args.card / name)
        write_card_section(args.card, SECTION, text)
        print(f"section written into {args.card / 'MODEL_CARD.md'}")


if __name__ == "__main__":
    main()
