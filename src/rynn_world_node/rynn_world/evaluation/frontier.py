"""The model-size / speed frontier: held-out quality against the graph's digital frame rate, one
point per transformer variant (a depth, or the same depth trained on more data), as a plot and a model-card section.

Each variant is a directory holding its checkpoint (transformer/ ...), its served evaluations on task
and on synthetic clips (evaluation.evaluate's results.json) and the graph benchmark's figures
(benchmarks/bench_digital_latency.py --digital-only --json, one or more graph*.json: the variants' graph
runs alternate, so a machine that slows down mid-way slows every variant alike):

    python -m rynn_world.evaluation.frontier --variant NAME DIR [--variant NAME DIR ...] --out DIR [--card CHECKPOINT_DIR]
        [--verdict TEXT]

DIR/tasks/results.json, DIR/sim/results.json, DIR/graph*.json; the transformer's depth and size are read
from DIR/checkpoint/transformer. --card writes the section and the plot into a packaged checkpoint.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..demo import DIGITAL_FPS_FLOOR
from ..training.package_default import write_card_section

SECTION = "## Model-size / speed frontier"
PLOT = "frontier.png"
METHOD = "student_no_dmd"


@dataclass
class Variant:
    name: str
    blocks: int
    parameters: int
    task: dict  # evaluation summary on task clips
    sim: dict  # evaluation summary on synthetic clips
    graph: list[dict]  # the benchmark's digital-mode figures, one per graph start

    def graph_median(self, key: str) -> float:
        return float(np.median([run[key] for run in self.graph]))

    def graph_range(self, key: str) -> str:
        values = [run[key] for run in self.graph]
        return f"{min(values):.1f}-{max(values):.1f}"

    def world_model_cpu(self) -> float:
        return float(np.median([run["cpu"].get("world_model_node", np.nan) for run in self.graph]))

    def gain(self, summary: dict, key: str = "psnr") -> float:
        methods = summary["methods"]
        return methods[METHOD]["all"][key] - methods["copy_reference"]["all"][key]


def _transformer_size(checkpoint: Path) -> tuple[int, int]:
    from safetensors import safe_open

    config = json.loads((checkpoint / "transformer" / "config.json").read_text())
    count = 0
    for weights in (checkpoint / "transformer").glob("*.safetensors"):
        with safe_open(str(weights), "pt") as f:
            count += sum(int(np.prod(f.get_slice(k).get_shape())) for k in f.keys())
    return int(config["num_layers"]), count


def load_variant(name: str, directory: Path) -> Variant:
    blocks, parameters = _transformer_size(directory / "checkpoint")
    graphs = sorted(directory.glob("graph*.json"))
    if not graphs:
        raise FileNotFoundError(f"{directory}: no graph*.json (benchmarks/bench_digital_latency.py --digital-only --json)")
    digital = [window for path in graphs for run in json.loads(path.read_text())["runs"] for window in run
               if window["mode"] == "digital"]
    read = lambda part: json.loads((directory / part / "results.json").read_text())["summary"]  # noqa: E731
    return Variant(name, blocks, parameters, read("tasks"), read("sim"), digital)


def plot(variants: list[Variant], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    for axis, (part, title) in zip(axes, (("task", "task clips (held-out seed)"), ("sim", "synthetic clips"))):
        fps = [v.graph_median("fps") for v in variants]
        gains = [v.gain(getattr(v, part)) for v in variants]
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


def _against_copy(methods: dict) -> str:
    """PSNR / SSIM of the method over all clips, copying the reference's in brackets."""
    ours, copy = methods[METHOD]["all"], methods["copy_reference"]["all"]
    return f"{ours['psnr']:.2f} / {ours['ssim']:.3f} ({copy['psnr']:.2f} / {copy['ssim']:.3f})"


def table(variants: list[Variant]) -> str:
    lines = ["| variant | blocks | parameters | task PSNR / SSIM (copy) | task grounding | task interaction (copy) "
             "| synthetic PSNR / SSIM (copy) | graph FPS (range) | frame age p50 (ms) | world model CPU (% of a core) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for v in variants:
        interaction = v.task.get("interaction", {}).get("all", {})
        lines.append(
            f"| {v.name} | {v.blocks} | {v.parameters / 1e6:.2f} M "
            f"| {_against_copy(v.task['methods'])} | {v.task['grounding']['all']['psnr_gap']:+.2f} "
            f"| {interaction.get(METHOD, float('nan')):.2f} ({interaction.get('copy_reference', float('nan')):.2f}) "
            f"| {_against_copy(v.sim['methods'])} | {v.graph_median('fps'):.1f} ({v.graph_range('fps')}) "
            f"| {v.graph_median('age_p50'):.0f} | {v.world_model_cpu():.0f} |")
    return "\n".join(lines)


def section(variants: list[Variant], recipe: str, verdict: str = "") -> str:
    return f"""{SECTION}
Transformer variants trained the same way (the same fine-tune steps from the packaged transformer; on the shipped
fine-tune's data unless the name says otherwise), each scored served on the held-out clips and run in the default
recording graph (`benchmarks/bench_digital_latency.py --digital-only`, median of the graph starts).
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
    variants = [load_variant(name, Path(directory)) for name, directory in args.variant]
    args.out.mkdir(parents=True, exist_ok=True)
    plot(variants, args.out / PLOT)
    text = section(variants, args.recipe, args.verdict)
    (args.out / "frontier.md").write_text(text)
    print(text)
    if args.card:
        shutil.copy(args.out / PLOT, args.card / PLOT)
        write_card_section(args.card, SECTION, text)
        print(f"section written into {args.card / 'MODEL_CARD.md'}")


if __name__ == "__main__":
    main()
