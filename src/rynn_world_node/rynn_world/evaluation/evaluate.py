"""Evaluate world-model checkpoints on held-out clips: one table per task (markdown + JSON).

Methods: copy-the-reference-frame, the bidirectional teacher, the causal student without DMD
(warm-up only) and the causal student, each given when its checkpoint is. The students run through
StreamingWorldModel as the live node runs them (null action on the reference, re-anchoring every
``reanchor_every`` frames, composited on the reference for the robot's fixed camera: ``static_camera``;
the teacher's frames are composited the same way). Metrics are over the
generated frames (frame 0, the given reference, excluded). Action grounding: the student run on
the same clip with another held-out episode's skeleton stream; the gap is own minus mismatched
(a model that ignores the action scores ~0). Interaction: PSNR inside the region of the objects
that move in a clip (``evaluation.interaction``), a table and ``interaction.png``. Per clip a
side-by-side MP4 is written: ground truth | skeleton | student, and ``side_by_side.png`` draws the first
clip of up to three tasks where an object moves as generated | real | copy (``evaluation.side_by_side``).

    python -m rynn_world.evaluation.evaluate --config src/rynn_world_node/config/eval_cpu.yaml
"""

import argparse
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
from tqdm import tqdm

from rynn_common.config_io import load_config

from ..data.latent_cache import encode_clip
from ..data.video import write_video
from ..live_session import SessionSettings
from ..model.configs import get_config
from ..training.config import DataConfig, parse_overrides
from ..training.datasets import build_clip_dataset
from ..training.export import load_or_build_transformer, load_vae
from .generation import method_video
from .interaction import MOVED_M, interaction_region, moved_objects, region_psnr
from .metrics import SKIPPED, FVDMetric, LPIPSMetric, psnr, ssim
from .side_by_side import SIDE_BY_SIDE_PNG, Example, ExamplePicker, plot_side_by_side

METHODS = ("copy_reference", "teacher", "student_no_dmd", "student")
INTERACTION_PNG = "interaction.png"


@dataclass
class EvalConfig:
    model: str = "embedded_cpu"
    teacher_checkpoint: str | None = None
    student_checkpoint: str | None = None
    student_no_dmd_checkpoint: str | None = None
    teacher_steps: int = 20
    reanchor_every: int | None = SessionSettings.reanchor_every  # the students' re-anchor interval: the live node's
    # The students' sampling schedule (timesteps, strictly decreasing); None: the model config's, which the node runs.
    denoising_list: list[int] | None = None
    data: DataConfig = field(default_factory=DataConfig)
    max_clips_per_task: int | None = None
    lpips_weights: str | None = None
    i3d_weights: str | None = None
    grounding_method: str | None = None  # whose action grounding is measured; default: student, else the first given
    static_camera: bool | None = None  # composite on the reference (rynn_world.compositing); None: robot episodes only
    output_dir: str = "outputs/eval"
    seed: int = 0
    num_threads: int | None = None


def _mean(values):
    numbers = [v for v in values if isinstance(v, float)]
    return float(np.mean(numbers)) if numbers else SKIPPED


def _fmt(value, digits):
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def static_camera(cfg: EvalConfig) -> bool:
    """Whether the methods composite on the reference: the robot's head camera is fixed, a human's is not."""
    return cfg.data.kind == "robot_episodes" if cfg.static_camera is None else cfg.static_camera


def held_out_clip_indices(clips, max_clips_per_task: int | None = None) -> list[int]:
    """Every clip of the held-out episodes (``data.stride`` apart: the whole episode, the approach
    and the interaction), at most ``max_clips_per_task`` of each task in dataset order."""
    chosen, per_task = [], {}
    for i in range(len(clips.items)):
        task = clips[i].task
        if max_clips_per_task is None or per_task.get(task, 0) < max_clips_per_task:
            chosen.append(i)
            per_task[task] = per_task.get(task, 0) + 1
    return chosen


def grounding_partner(clips, chosen: list[int], n: int) -> int | None:
    """The clip whose control frames replace clip ``chosen[n]``'s to measure action grounding: the next
    chosen clip (cyclically) from another episode; None when all come from one episode."""
    own_episode = clips.items[chosen[n]][0]
    for k in range(1, len(chosen)):
        other = chosen[(n + k) % len(chosen)]
        if clips.items[other][0] != own_episode:
            return other
    return None


def evaluate(cfg: EvalConfig) -> dict:
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    config = get_config(cfg.model)
    if cfg.denoising_list is not None:
        config = dataclasses.replace(config, denoising_list=tuple(cfg.denoising_list))
    out = Path(cfg.output_dir)
    (out / "videos").mkdir(parents=True, exist_ok=True)
    checkpoints = {"teacher": cfg.teacher_checkpoint, "student_no_dmd": cfg.student_no_dmd_checkpoint,
                   "student": cfg.student_checkpoint}
    vae_source = next((c for c in checkpoints.values() if c), None)
    if vae_source is None:
        raise ValueError("give at least one of teacher_checkpoint / student_checkpoint / student_no_dmd_checkpoint")
    vae = load_vae(config, vae_source)
    models = {name: load_or_build_transformer(config, path).eval() for name, path in checkpoints.items() if path}
    if cfg.grounding_method and cfg.grounding_method not in models:
        raise ValueError(f"grounding_method {cfg.grounding_method!r} has no checkpoint; given: {sorted(models)}")
    clips = build_clip_dataset(cfg.data, config)
    chosen = held_out_clip_indices(clips, cfg.max_clips_per_task)
    lpips, fvd = LPIPSMetric(cfg.lpips_weights), {m: FVDMetric(cfg.i3d_weights) for m in METHODS}
    encoded = {i: encode_clip(vae, clips[i]) for i in chosen} if "teacher" in models else {}
    rows, picker = [], ExamplePicker()
    for n, i in enumerate(tqdm(chosen, desc="evaluate")):
        clip = clips[i]
        truth = clip.frames[1:]

        def generate(name, control_index, seed, clip_index=i):
            """This clip's frames from `name`, conditioned on clip `control_index`'s control frames."""
            return method_video(name, models.get(name), vae, config, clips[clip_index], clips[control_index], seed,
                                cfg.teacher_steps, cfg.reanchor_every, encoded.get(clip_index), encoded.get(control_index),
                                static_camera(cfg))

        videos = {name: generate(name, i, cfg.seed + n) for name in ("copy_reference", *models)}
        row = {"task": clip.task, "clip": clip.source_id}
        for name, video in videos.items():
            row[name] = {"psnr": psnr(video, truth), "ssim": ssim(video, truth), "lpips": lpips(video, truth)}
            fvd[name].add(video, truth)
        region = interaction_region(clip)
        if region is not None:
            row["interaction"] = {"region_pixels": int(region.sum()), "moved": moved_objects(clip)} | {
                name: region_psnr(video, truth, region) for name, video in videos.items()}
        grounded = cfg.grounding_method or ("student" if "student" in models else next(iter(models)))
        picker.offer(Example(clip.source_id, clip.task, videos[grounded], truth, videos["copy_reference"]),
                     moved=region is not None)
        other = grounding_partner(clips, chosen, n)
        if other is not None:
            mismatched = generate(grounded, other, cfg.seed + n)
            row["grounding"] = {"method": grounded, "mismatched_clip": clips[other].source_id,
                                "psnr_gap": row[grounded]["psnr"] - psnr(mismatched, truth),
                                "ssim_gap": row[grounded]["ssim"] - ssim(mismatched, truth)}
        side_by_side = np.concatenate([clip.frames, clip.skeleton, np.concatenate([clip.reference[None], videos[grounded]])], axis=2)
        write_video(out / "videos" / f"{clip.source_id.replace('/', '_').replace('@', '_')}.mp4", side_by_side, config.fps)
        rows.append(row)
    report = summarize(rows, [m for m in METHODS if m in videos], fvd)
    (out / "results.json").write_text(json.dumps({"config": cfg.__dict__ | {"data": cfg.data.__dict__},
                                                  "summary": report, "clips": rows}, indent=1, default=str))
    (out / "results.md").write_text(markdown_table(report))
    if report["interaction"]:
        plot_interaction(report, out / INTERACTION_PNG)
    if picker.examples:
        plot_side_by_side(picker.examples, out / SIDE_BY_SIDE_PNG, config.fps)
    return report


def summarize(rows: list[dict], methods: list[str], fvd: dict) -> dict:
    tasks = sorted({r["task"] for r in rows})
    report = {"methods": {}, "grounding": {}, "interaction": {}}
    for method in methods:
        per_task = {}
        for task in tasks + ["all"]:
            chosen = [r for r in rows if task in ("all", r["task"])]
            per_task[task] = {m: _mean([r[method][m] for r in chosen]) for m in ("psnr", "ssim", "lpips")}
            per_task[task]["clips"] = len(chosen)
        per_task["all"]["fvd"] = fvd[method].compute()
        report["methods"][method] = per_task
    for task in tasks + ["all"]:
        chosen = [r["grounding"] for r in rows if "grounding" in r and task in ("all", r["task"])]
        if chosen:
            report["grounding"][task] = {"method": chosen[0]["method"], "psnr_gap": _mean([g["psnr_gap"] for g in chosen]),
                                         "ssim_gap": _mean([g["ssim_gap"] for g in chosen]), "clips": len(chosen)}
    for task in tasks + ["all"]:
        chosen = [r["interaction"] for r in rows if "interaction" in r and task in ("all", r["task"])]
        if chosen:
            report["interaction"][task] = {"clips": len(chosen)} | {
                method: _mean([i[method] for i in chosen]) for method in methods}
    return report


def markdown_table(report: dict) -> str:
    lines = ["| method | task | clips | PSNR ↑ | SSIM ↑ | LPIPS ↓ | FVD ↓ |", "|---|---|---|---|---|---|---|"]
    for method, per_task in report["methods"].items():
        for task, m in per_task.items():
            lines.append(f"| {method} | {task} | {m['clips']} | {_fmt(m['psnr'], 2)} | {_fmt(m['ssim'], 3)} | "
                         f"{_fmt(m['lpips'], 3)} | {_fmt(m.get('fvd', ''), 1)} |")
    lines += ["", "Action grounding (own skeleton minus another episode's skeleton, same clip):", "",
              "| method | task | clips | PSNR gap (dB) | SSIM gap |", "|---|---|---|---|---|"]
    for task, g in report["grounding"].items():
        lines.append(f"| {g['method']} | {task} | {g['clips']} | {_fmt(g['psnr_gap'], 2)} | {_fmt(g['ssim_gap'], 4)} |")
    if report.get("interaction"):
        methods = list(report["methods"])
        lines += ["", f"Interaction (PSNR in dB inside the moved objects' region, clips where a task object moves "
                  f"more than {MOVED_M * 100:g} cm; evaluation.interaction):", "",
                  "| task | clips | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods)]
        for task, scores in report["interaction"].items():
            lines.append(f"| {task} | {scores['clips']} | " + " | ".join(_fmt(scores[m], 2) for m in methods) + " |")
    return "\n".join(lines) + "\n"


def plot_interaction(report: dict, path: Path) -> Path:
    """Bars per task: each method's PSNR inside the moved objects' region."""
    tasks, methods = list(report["interaction"]), list(report["methods"])
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.8 / len(methods)
    for k, method in enumerate(methods):
        values = [report["interaction"][t][method] for t in tasks]
        ax.bar(np.arange(len(tasks)) + (k - (len(methods) - 1) / 2) * width, values, width, label=method)
    ax.set_xticks(np.arange(len(tasks)), [f"{t}\n({report['interaction'][t]['clips']} clips)" for t in tasks], fontsize=8)
    ax.set_ylabel("PSNR in the moved objects' region (dB)")
    low = min(report["interaction"][t][m] for t in tasks for m in methods)
    ax.set_ylim(max(0.0, low - 3), None)
    ax.legend(fontsize=7, ncol=len(methods))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("overrides", nargs="*", help="key.sub=value overrides of the YAML")
    args = parser.parse_args(argv)
    cfg = load_config(EvalConfig, args.config, parse_overrides(args.overrides))
    evaluate(cfg)
    print((Path(cfg.output_dir) / "results.md").read_text())


if __name__ == "__main__":
    main()
