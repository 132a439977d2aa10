"""Evaluation on held-out clips produces the per-task table (markdown + JSON), grounding and videos."""

import json

import numpy as np
import pytest
import torch

from rynn_world.evaluation.evaluate import EvalConfig, evaluate
from rynn_world.evaluation.metrics import SKIPPED, psnr, ssim
from rynn_world.model.configs import get_config
from rynn_world.model.transformer import RynnWorldTransformer
from rynn_world.model.vae import build_vae
from rynn_world.training.config import DataConfig
from rynn_world.training.export import save_world_model
from rynn_world.training.package_default import package_default
from test_training_pipeline import make_vitra_clips


def test_psnr_and_ssim_values():
    a = np.zeros((2, 16, 16, 3), dtype=np.uint8)
    b = a.copy()
    b[:] = 255
    assert abs(psnr(a, b) - 0.0) < 1e-6
    c = a.copy()
    c[0, 0, 0, 0] = 255  # one pixel off: MSE = 1 / 1536
    assert abs(psnr(c, a) - 10 * np.log10(1536)) < 1e-3
    assert abs(ssim(a + 7, a + 7) - 1.0) < 1e-6


def test_evaluation_writes_the_table_with_baselines_grounding_and_videos(tmp_path):
    config = get_config("tiny")
    torch.manual_seed(0)
    model = RynnWorldTransformer(**config.transformer, null_text_tokens=config.null_text_tokens)
    checkpoint = save_world_model(tmp_path / "ckpt", model, build_vae(config.vae))
    root = make_vitra_clips(tmp_path / "clips", clips=3)
    cfg = EvalConfig(model="tiny", teacher_checkpoint=str(checkpoint), student_checkpoint=str(checkpoint),
                     teacher_steps=2, data=DataConfig(kind="vitra", root=str(root), clip_frames=9, stride=8),
                     output_dir=str(tmp_path / "eval"))
    report = evaluate(cfg)
    methods = report["methods"]
    assert set(methods) == {"copy_reference", "teacher", "student"}
    assert set(methods["student"]) == {"slide0", "slide1", "all"} and methods["student"]["all"]["clips"] == 3
    for method in methods.values():
        assert np.isfinite(method["all"]["psnr"]) and 0 < method["all"]["ssim"] <= 1
        assert method["all"]["lpips"] == SKIPPED and method["all"]["fvd"] == SKIPPED
    assert methods["copy_reference"]["all"]["psnr"] > 10  # static background, moving square
    grounding = report["grounding"]["all"]
    assert grounding["method"] == "student" and grounding["clips"] == 3 and np.isfinite(grounding["psnr_gap"])
    table = (tmp_path / "eval" / "results.md").read_text()
    assert "| copy_reference | all | 3 |" in table and "skipped (no local weights)" in table and "PSNR gap" in table
    saved = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert len(saved["clips"]) == 3 and saved["summary"]["methods"]["teacher"]["all"]["psnr"] == methods["teacher"]["all"]["psnr"]
    assert len(list((tmp_path / "eval" / "videos").glob("*.mp4"))) == 3


def test_packaging_copies_the_checkpoint_and_writes_the_card_from_the_evaluation(tmp_path):
    config = get_config("tiny")
    torch.manual_seed(0)
    checkpoint = save_world_model(tmp_path / "ckpt", RynnWorldTransformer(**config.transformer,
                                  null_text_tokens=config.null_text_tokens), build_vae(config.vae))
    root = make_vitra_clips(tmp_path / "clips", clips=2)
    evaluate(EvalConfig(model="tiny", student_checkpoint=str(checkpoint), data=DataConfig(
        kind="vitra", root=str(root), clip_frames=9, stride=8), output_dir=str(tmp_path / "eval")))
    recipe = tmp_path / "eval.yaml"
    recipe.write_text("model: tiny\nteacher_steps: 2\n")
    target = package_default("tiny", checkpoint, tmp_path / "eval" / "results.json", "student", [recipe],
                             target=tmp_path / "shipped")
    assert sorted(p.name for p in target.iterdir()) == ["MODEL_CARD.md", "transformer", "vae"]
    assert (target / "vae" / "config.json").read_bytes() == (checkpoint / "vae" / "config.json").read_bytes()
    card = (target / "MODEL_CARD.md").read_text()
    results = json.loads((tmp_path / "eval" / "results.json").read_text())["summary"]
    assert f"{results['methods']['student']['all']['psnr']:.2f}" in card
    assert f"python -m rynn_world.evaluation.evaluate --config {recipe}" in card
    assert ("Verdict: meets" in card) == (results["methods"]["student"]["all"]["psnr"] >
                                          results["methods"]["copy_reference"]["all"]["psnr"] and
                                          results["methods"]["student"]["all"]["ssim"] >
                                          results["methods"]["copy_reference"]["all"]["ssim"] and
                                          results["grounding"]["all"]["psnr_gap"] > 0)
    with pytest.raises(ValueError, match="no 'teacher' rows"):
        package_default("tiny", checkpoint, tmp_path / "eval" / "results.json", "teacher", [recipe], target=tmp_path / "x")
