"""Training curves for the model card: the training losses and the held-out PSNR/SSIM against step.

Every checkpoint a run kept (`<output_dir>/checkpoints/step_*`) is scored on the evaluation
config's held-out clips, the way `evaluate` scores the final models: the stage-2 teacher with its
EMA weights (what its run exports) and the bidirectional sampler, the causal student's warm-up with
its raw weights (what `final_warmup` holds) through StreamingWorldModel, and the DMD phase as the
`student` curve. The x axis is the cumulative step: stage 2, then distillation. Without a stage-2
config the distillation run fine-tunes a student (its `teacher_checkpoint` is a student, as in
finetune_tasks_cpu.yaml): that checkpoint is step 0 of the student curve.

    python -m rynn_world.evaluation.curves --eval-config src/rynn_world_node/config/eval_cpu.yaml \\
        --stage2-config src/rynn_world_node/config/train_stage2_cpu.yaml \\
        --distill-config src/rynn_world_node/config/distill_cpu.yaml
        [--eval-set KEY=VALUE ...] [--distill-set KEY=VALUE ...]   (overrides, as the training entry points take them)

writes <eval output_dir>/curves.json and training_curves.png.
"""

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
from safetensors.torch import load_file
from tqdm import tqdm

from rynn_common.config_io import load_config

from ..data.latent_cache import encode_clip
from ..model.configs import get_config
from ..training.config import DistillConfig, TrainConfig, parse_overrides
from ..training.datasets import build_clip_dataset
from ..training.export import load_or_build_transformer, load_vae
from ..training.state import CHECKPOINT_GLOB
from .evaluate import EvalConfig, held_out_clip_indices, static_camera
from .generation import method_video
from .metrics import psnr, ssim

CURVES_JSON, CURVES_PNG = "curves.json", "training_curves.png"


@dataclass(frozen=True)
class CurvePoint:
    curve: str  # teacher | student_no_dmd | student
    step: int  # cumulative: stage-2 steps first, then distillation steps
    checkpoint: Path  # a training-state directory, or an exported one (with transformer/)
    module: str = ""  # the prefix of its weights in modules.safetensors / ema.safetensors
    use_ema: bool = False


def checkpoint_points(stage2_dir: Path | None, stage2_steps: int, distill_dir: Path, warmup_steps: int,
                      stage2_init: Path | None = None, finetuned: Path | None = None) -> list[CurvePoint]:
    """The kept checkpoints of both runs, in step order, labelled with the curve each belongs to; each
    with the weights its run exports (the teacher's and the DMD student's EMA, the warm-up's raw ones),
    plus the exported warm-up student (`final_warmup`, the shipped model). A stage-2 run that starts
    from exported weights (`stage2_init`, e.g. a teacher fine-tuned on new episodes) has them as step 0.
    Without a stage-2 run, a distillation run that fine-tunes the exported student `finetuned` has it as step 0."""
    points = [CurvePoint("teacher", 0, stage2_init)] if stage2_init is not None else []
    if finetuned is not None:
        points.append(CurvePoint("student_no_dmd", stage2_steps, finetuned))
    for directory in sorted((stage2_dir / "checkpoints").glob(CHECKPOINT_GLOB)) if stage2_dir is not None else ():
        points.append(CurvePoint("teacher", _step(directory), directory, "model", use_ema=True))
    for directory in sorted((distill_dir / "checkpoints").glob(CHECKPOINT_GLOB)):
        step = _step(directory)
        if step < warmup_steps:
            points.append(CurvePoint("student_no_dmd", stage2_steps + step, directory, "student"))
        elif step > warmup_steps:
            points.append(CurvePoint("student", stage2_steps + step, directory, "student", use_ema=True))
    if (distill_dir / "final_warmup" / "transformer").is_dir():
        points.append(CurvePoint("student_no_dmd", stage2_steps + warmup_steps, distill_dir / "final_warmup"))
    return sorted(points, key=lambda p: p.step)


def _step(checkpoint: Path) -> int:
    return int(checkpoint.name.split("_")[1])


def load_checkpoint_transformer(config, point: CurvePoint, base_checkpoint: str):
    """A transformer built like the run's export, with the checkpoint's (EMA or raw) weights."""
    if (point.checkpoint / "transformer").is_dir():
        return load_or_build_transformer(config, str(point.checkpoint)).eval()
    model = load_or_build_transformer(config, base_checkpoint)
    prefix = f"{point.module}."
    weights = {k[len(prefix):]: v for k, v in load_file(str(point.checkpoint / "modules.safetensors")).items()
               if k.startswith(prefix)}
    model.load_state_dict(weights)
    if point.use_ema:
        shadow = {k[len(prefix):]: v for k, v in load_file(str(point.checkpoint / "ema.safetensors")).items()
                  if k.startswith(prefix)}
        parameters = dict(model.named_parameters())
        with torch.no_grad():
            for name, value in shadow.items():
                parameters[name].copy_(value)
    return model.eval()


def score_points(cfg: EvalConfig, points: list[CurvePoint], base_checkpoint: str) -> dict:
    config = get_config(cfg.model)
    vae = load_vae(config, base_checkpoint)
    clips = build_clip_dataset(cfg.data, config)
    chosen = [clips[i] for i in held_out_clip_indices(clips, cfg.max_clips_per_task)]
    encoded = [encode_clip(vae, clip) for clip in chosen]

    def mean_scores(method: str, transformer=None) -> dict:
        """PSNR and SSIM of `method`'s frames, averaged over the held-out clips, as `evaluate` scores them."""
        scores = []
        for n, (clip, latents) in enumerate(zip(chosen, encoded)):
            video = method_video(method, transformer, vae, config, clip, clip, cfg.seed + n, cfg.teacher_steps,
                                 cfg.reanchor_every, latents, latents, static_camera(cfg))
            scores.append((psnr(video, clip.frames[1:]), ssim(video, clip.frames[1:])))
        psnrs, ssims = zip(*scores)
        return {"psnr": float(np.mean(psnrs)), "ssim": float(np.mean(ssims))}

    rows = [{"curve": point.curve, "step": point.step, "checkpoint": str(point.checkpoint)}
            | mean_scores(point.curve, load_checkpoint_transformer(config, point, base_checkpoint))
            for point in tqdm(points, desc="checkpoints")]
    return {"clips": len(chosen), "copy_reference": mean_scores("copy_reference"), "points": rows}


def losses(run_dir: Path, offset: int) -> dict[str, list[tuple[int, float]]]:
    """A run's loss history (`losses.json` from the training loop), steps shifted by `offset`."""
    history = json.loads((run_dir / "losses.json").read_text())
    return {name: [(step + offset, value) for step, value in values] for name, values in history.items()}


def plot_curves(report: dict, loss_history: dict, boundary: int, path: Path) -> Path:
    fig, axes = plt.subplots(3, 1, figsize=(7.5, 8), sharex=True)
    for name, values in loss_history.items():
        if name.endswith(("flow_matching", "causal_flow_matching")) and values:
            steps, value = np.array(values, dtype=np.float64).T
            window = max(1, len(value) // 50)
            axes[0].plot(steps[window - 1:], np.convolve(value, np.ones(window) / window, "valid"), lw=1.2,
                         label=f"{name} (mean of {window})")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("training loss")
    for ax, metric, unit in ((axes[1], "psnr", "held-out PSNR (dB)"), (axes[2], "ssim", "held-out SSIM")):
        for curve in ("teacher", "student_no_dmd", "student"):
            points = [(p["step"], p[metric]) for p in report["points"] if p["curve"] == curve]
            if points:
                ax.plot(*zip(*points), marker="o", ms=3, label=curve)
        ax.axhline(report["copy_reference"][metric], color="grey", ls="--", lw=1, label="copy the reference")
        ax.set_ylabel(unit)
    for ax in axes:
        ax.axvline(boundary, color="black", lw=0.6, alpha=0.5)
        ax.legend(fontsize=7, loc="best")
    axes[-1].set_xlabel(f"step (stage 2: 0-{boundary}, then distillation)" if boundary else "fine-tuning step")
    fig.suptitle(f"training curves, {report['clips']} held-out clips")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-config", required=True, type=Path)
    parser.add_argument("--stage2-config", type=Path, help="omit when the distillation run fine-tunes a student")
    parser.add_argument("--distill-config", required=True, type=Path)
    parser.add_argument("--eval-set", nargs="*", default=[], metavar="KEY=VALUE", help="overrides of the evaluation config")
    parser.add_argument("--distill-set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="overrides of the distillation config (a variant's teacher_checkpoint, run.output_dir)")
    args = parser.parse_args(argv)
    cfg = load_config(EvalConfig, args.eval_config, parse_overrides(args.eval_set))
    distill = load_config(DistillConfig, args.distill_config, parse_overrides(args.distill_set))
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    distill_dir = Path(distill.run.output_dir)
    if args.stage2_config is not None:
        stage2 = load_config(TrainConfig, args.stage2_config)
        stage2_dir, stage2_steps = Path(stage2.run.output_dir), stage2.run.steps
        init = Path(stage2.init_checkpoint) if stage2.init_checkpoint else None
        points = checkpoint_points(stage2_dir, stage2_steps, distill_dir, distill.warmup_steps, init)
        base, history = stage2_dir / "final", losses(stage2_dir, 0) | losses(distill_dir, stage2_steps)
    else:
        stage2_steps, base = 0, Path(distill.teacher_checkpoint)
        points = checkpoint_points(None, 0, distill_dir, distill.warmup_steps, finetuned=base)
        history = losses(distill_dir, 0)
    report = score_points(cfg, points, str(base))
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / CURVES_JSON).write_text(json.dumps(report, indent=1))
    print(f"wrote {plot_curves(report, history, stage2_steps, out / CURVES_PNG)}")
    for p in report["points"]:
        print(f"{p['curve']:>15} step {p['step']:>5}: PSNR {p['psnr']:.2f} dB, SSIM {p['ssim']:.3f}")
    print(f"copy the reference: PSNR {report['copy_reference']['psnr']:.2f} dB, SSIM {report['copy_reference']['ssim']:.3f}")


if __name__ == "__main__":
    main()
