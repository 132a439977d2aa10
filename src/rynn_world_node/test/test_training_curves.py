"""The model card's training curves score each kept checkpoint with the weights its run exports: the
last point of every curve equals the held-out evaluation of the exported model, to the bit."""

import json
import shutil

import pytest
from safetensors.torch import load_file, save_file
from test_training_pipeline import make_vitra_clips

from rynn_common.config_io import save_yaml, to_dict
from rynn_world.evaluation.curves import CURVES_JSON, CURVES_PNG, checkpoint_points, losses, plot_curves, score_points
from rynn_world.evaluation.evaluate import EvalConfig, evaluate
from rynn_world.evaluation.side_by_side import SIDE_BY_SIDE_PNG
from rynn_world.training.config import DataConfig, DistillConfig, OptimConfig, RunConfig, TrainConfig
from rynn_world.training.distill import distill
from rynn_world.training.package_default import FINETUNE_SECTION, package_default, package_finetune
from rynn_world.training.train import train

STAGE2_STEPS, WARMUP, DMD = 6, 4, 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("curves")
    clips = make_vitra_clips(root / "clips", clips=2)
    data = DataConfig(kind="vitra", root=str(clips), clip_frames=9, stride=8, latent_cache=str(root / "latents"))
    stage2 = train(TrainConfig(model="tiny", stage=2, finetune="full", ema_decay=0.9, data=data,
                               optim=OptimConfig(lr=3e-3, warmup_steps=2),
                               run=RunConfig(output_dir=str(root / "stage2"), steps=STAGE2_STEPS, batch_size=2,
                                             save_every=3, progress=False)), resume=None)
    distill(DistillConfig(model="tiny", teacher_checkpoint=str(stage2), warmup_steps=WARMUP, warmup_lr=3e-3,
                          dmd_steps=DMD, generator_lr=1e-4, critic_lr=1e-3, critic_updates_per_generator=1,
                          ema_decay=0.9, data=data, optim=OptimConfig(warmup_steps=1),
                          run=RunConfig(output_dir=str(root / "distill"), batch_size=2, save_every=2, progress=False)),
            resume=None)
    eval_cfg = EvalConfig(model="tiny", teacher_checkpoint=str(stage2), teacher_steps=3,
                          student_no_dmd_checkpoint=str(root / "distill" / "final_warmup"),
                          student_checkpoint=str(root / "distill" / "final"), reanchor_every=None,
                          data=DataConfig(kind="vitra", root=str(clips), clip_frames=9, stride=8),
                          output_dir=str(root / "eval"))
    return root, eval_cfg


def test_checkpoints_are_labelled_by_phase_on_one_step_axis(runs):
    root, _ = runs
    points = checkpoint_points(root / "stage2", STAGE2_STEPS, root / "distill", WARMUP)
    assert [(p.curve, p.step) for p in points] == [
        ("teacher", 3), ("teacher", 6),
        ("student_no_dmd", 8),  # distillation step 2 (raw weights)
        ("student_no_dmd", 10),  # final_warmup; the step-4 checkpoint holds the same weights and is skipped
        ("student", 12),  # after the DMD steps, with the EMA the run exports
    ]
    assert points[3].checkpoint == root / "distill" / "final_warmup"


def test_the_last_point_of_each_curve_is_the_exported_models_evaluation(runs, tmp_path):
    root, eval_cfg = runs
    points = checkpoint_points(root / "stage2", STAGE2_STEPS, root / "distill", WARMUP)
    report = score_points(eval_cfg, points, str(root / "stage2" / "final"))
    table = evaluate(eval_cfg)["methods"]
    last = {p["curve"]: p for p in report["points"]}
    for curve in ("teacher", "student_no_dmd", "student"):
        assert last[curve]["psnr"] == pytest.approx(table[curve]["all"]["psnr"], abs=1e-9), curve
        assert last[curve]["ssim"] == pytest.approx(table[curve]["all"]["ssim"], abs=1e-9), curve
    assert report["copy_reference"]["psnr"] == pytest.approx(table["copy_reference"]["all"]["psnr"], abs=1e-9)
    # an earlier teacher checkpoint is a different model
    assert report["points"][0]["psnr"] != last["teacher"]["psnr"]
    history = losses(root / "stage2", 0) | losses(root / "distill", STAGE2_STEPS)
    assert history["distill/causal_flow_matching"][0][0] == STAGE2_STEPS + 1
    eval_dir = root / "eval"  # where `curves` writes, next to the evaluation's results.json
    assert plot_curves(report, history, STAGE2_STEPS, eval_dir / CURVES_PNG).stat().st_size > 10_000
    (eval_dir / CURVES_JSON).write_text(json.dumps(report))

    recipe = tmp_path / "eval.yaml"
    recipe.write_text("model: tiny\nteacher_steps: 3\n")
    shipped = package_default("tiny", root / "distill" / "final_warmup", eval_dir / "results.json", "student_no_dmd",
                              [recipe], target=tmp_path / "shipped")
    card = (shipped / "MODEL_CARD.md").read_text()
    assert f"![training loss and held-out PSNR/SSIM against step]({CURVES_PNG})" in card
    assert f"| teacher | 3 | {report['points'][0]['psnr']:.2f} |" in card
    assert (shipped / CURVES_PNG).read_bytes() == (eval_dir / CURVES_PNG).read_bytes()


FINETUNE = 4


@pytest.fixture(scope="module")
def finetuned(runs):
    """The warm-up student fine-tuned further (warm-up only, no DMD), as finetune_tasks_cpu.yaml does."""
    root, eval_cfg = runs
    config = DistillConfig(model="tiny", teacher_checkpoint=str(root / "distill" / "final_warmup"),
                           warmup_steps=FINETUNE, warmup_lr=3e-3, dmd_steps=0, data=eval_cfg.data,
                           optim=OptimConfig(warmup_steps=1),
                           run=RunConfig(output_dir=str(root / "finetune"), batch_size=2, save_every=2, progress=False))
    distill(config, resume=None)
    return root, eval_cfg, config


def test_a_finetune_curve_starts_at_the_student_it_fine_tunes(finetuned):
    root, eval_cfg, config = finetuned
    start = root / "distill" / "final_warmup"
    points = checkpoint_points(None, 0, root / "finetune", FINETUNE, finetuned=start)
    assert [(p.curve, p.step, p.checkpoint) for p in points] == [
        ("student_no_dmd", 0, start), ("student_no_dmd", 2, root / "finetune" / "checkpoints" / "step_00000002"),
        ("student_no_dmd", 4, root / "finetune" / "final_warmup")]
    report = score_points(eval_cfg, points, str(start))
    before = evaluate(eval_cfg)["methods"]["student_no_dmd"]["all"]
    after = evaluate(EvalConfig(**{**vars(eval_cfg), "student_no_dmd_checkpoint": str(root / "finetune" / "final_warmup"),
                                   "output_dir": str(root / "eval_after")}))["methods"]["student_no_dmd"]["all"]
    assert report["points"][0]["psnr"] == pytest.approx(before["psnr"], abs=1e-9)
    assert report["points"][-1]["psnr"] == pytest.approx(after["psnr"], abs=1e-9)
    assert after["psnr"] != before["psnr"], "the fine-tune changed the model"


def test_packaging_a_finetune_swaps_the_transformer_and_writes_its_section(finetuned, tmp_path):
    root, eval_cfg, config = finetuned
    recipe = tmp_path / "eval.yaml"
    recipe.write_text("model: tiny\nteacher_steps: 3\n")
    target = package_default("tiny", root / "distill" / "final_warmup", root / "eval" / "results.json",
                             "student_no_dmd", [recipe], target=tmp_path / "shipped")
    finetune_yaml = tmp_path / "finetune.yaml"
    save_yaml(finetune_yaml, to_dict(config))
    evaluation = (root / "eval" / "results.json", root / "eval_after" / "results.json")
    picture = b"\x89PNG the fine-tuned transformer's clips"
    (evaluation[1].parent / SIDE_BY_SIDE_PNG).write_bytes(picture)  # evaluate writes it beside its results
    package_finetune("tiny", root / "finetune" / "final_warmup", [evaluation], "student_no_dmd",
                     [finetune_yaml, recipe], target)
    assert (target / "transformer").is_dir()
    assert (target / SIDE_BY_SIDE_PNG).read_bytes() == picture  # the card shows the transformer it ships
    shipped = (target / "transformer" / "diffusion_pytorch_model.safetensors").read_bytes()
    assert shipped == (root / "finetune" / "final_warmup" / "transformer" / "diffusion_pytorch_model.safetensors").read_bytes()
    card = (target / "MODEL_CARD.md").read_text()
    after = json.loads(evaluation[1].read_text())["summary"]["methods"]["student_no_dmd"]["all"]
    assert card.count(FINETUNE_SECTION) == 1 and f"| after (shipped) | {after['psnr']:.2f} |" in card
    assert f"fine-tuned on task episodes (`{root / 'finetune' / 'final_warmup'}`" in card
    assert card.index(FINETUNE_SECTION) < card.index("## Limits")
    other_clips = json.loads(evaluation[1].read_text())
    other_clips["config"]["data"]["stride"] = 4
    (tmp_path / "other.json").write_text(json.dumps(other_clips))
    with pytest.raises(ValueError, match="same clips"):
        package_finetune("tiny", root / "finetune" / "final_warmup", [(evaluation[0], tmp_path / "other.json")],
                         "student_no_dmd", [finetune_yaml, recipe], target)
    other_vae = tmp_path / "other_vae"
    shutil.copytree(root / "finetune" / "final_warmup", other_vae)
    vae_file = other_vae / "vae" / "diffusion_pytorch_model.safetensors"
    save_file({k: v + 1e-3 for k, v in load_file(str(vae_file)).items()}, str(vae_file))
    with pytest.raises(ValueError, match="another VAE"):
        package_finetune("tiny", other_vae, [evaluation], "student_no_dmd", [finetune_yaml, recipe], target)
    decoder_only = tmp_path / "decoder_only"  # a fine-tuned decoder under the same encoder: same latent space
    shutil.copytree(root / "finetune" / "final_warmup", decoder_only)
    vae_file = decoder_only / "vae" / "diffusion_pytorch_model.safetensors"
    save_file({k: v + 1e-3 if k.startswith(("decoder.", "post_quant_conv.")) else v
               for k, v in load_file(str(vae_file)).items()}, str(vae_file))
    package_finetune("tiny", decoder_only, [evaluation], "student_no_dmd", [finetune_yaml, recipe], target)
    assert (target / "vae" / "diffusion_pytorch_model.safetensors").read_bytes() != vae_file.read_bytes(), \
        "the fine-tune swaps the transformer only"
