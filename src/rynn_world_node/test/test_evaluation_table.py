"""Evaluation on held-out clips produces the per-task table (markdown + JSON), grounding and videos."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from test_training_pipeline import make_vitra_clips

from rynn_common.config_io import load_config
from rynn_world.evaluation.evaluate import EvalConfig, evaluate
from rynn_world.evaluation.metrics import SKIPPED, FVDMetric, LPIPSMetric, psnr, ssim
from rynn_world.model.configs import get_config
from rynn_world.model.transformer import RynnWorldTransformer
from rynn_world.model.vae import build_vae
from rynn_world.training.config import DataConfig, DistillConfig, TrainConfig, VAETrainConfig
from rynn_world.training.export import save_world_model
from rynn_world.training.package_default import package_default, recipe_command


def test_psnr_and_ssim_values():
    a = np.zeros((2, 16, 16, 3), dtype=np.uint8)
    b = a.copy()
    b[:] = 255
    assert abs(psnr(a, b) - 0.0) < 1e-6
    c = a.copy()
    c[0, 0, 0, 0] = 255  # one pixel off: MSE = 1 / 1536
    assert abs(psnr(c, a) - 10 * np.log10(1536)) < 1e-3
    assert abs(ssim(a + 7, a + 7) - 1.0) < 1e-6


class TinyLPIPSBackbone(torch.nn.Module):
    """Two feature maps (the input itself and a fixed 1x1 conv + ReLU) with their LPIPS heads."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 2, 1)
        with torch.no_grad():
            self.conv.weight.copy_(torch.tensor([[1.0, -1.0, 0.0], [0.0, 0.0, 1.0]]).view(2, 3, 1, 1))
            self.conv.bias.copy_(torch.tensor([1.0, 2.0]))
        self.register_buffer("lpips_head_0", torch.tensor([0.5, 1.0, 2.0]))
        self.register_buffer("lpips_head_1", torch.tensor([1.0, 3.0]))

    def forward(self, x):
        return [x, torch.relu(self.conv(x))]


def test_lpips_on_a_local_backbone_matches_the_hand_computation(tmp_path):
    torch.jit.save(torch.jit.script(TinyLPIPSBackbone()), str(tmp_path / "lpips.pt"))
    red, green, blue = (255, 0, 0), (0, 255, 0), (0, 0, 255)
    target = np.zeros((2, 4, 4, 3), dtype=np.uint8)
    target[0], target[1] = green, blue
    generated = target.copy()
    generated[0, :, :2] = red  # half of frame 0 differs; frame 1 is identical
    # by hand at a red vs green pixel: layer 0, x = (1,-1,-1) vs (-1,1,-1), unit-normalised by sqrt(3):
    # squared differences (4/3, 4/3, 0) . heads (0.5, 1, 2) = 2. Layer 1: relu(x0 - x1 + 1, x2 + 2) =
    # (3, 1) vs (0, 1), normalised (3, 1)/sqrt(10) vs (0, 1): 9/10 * 1 + (1 - 1/sqrt(10))^2 * 3.
    per_pixel = 2.0 + 0.9 + 3 * (1 - 1 / np.sqrt(10)) ** 2
    expected = per_pixel * 0.5 / 2  # half the pixels of one of two frames
    assert LPIPSMetric(str(tmp_path / "lpips.pt"))(generated, target) == pytest.approx(expected, rel=1e-5)
    assert LPIPSMetric(str(tmp_path / "lpips.pt"))(target, target) == pytest.approx(0.0, abs=1e-7)
    assert LPIPSMetric(None)(generated, target) == SKIPPED


class TinyI3D(torch.nn.Module):
    """Two features: channel 0 of the first frame and channel 1 of the last frame, spatially averaged
    (so a wrong channel/time layout of the input changes them)."""

    def forward(self, x, rescale: bool = False, resize: bool = False, return_features: bool = True):
        assert x.shape[1] == 3 and x.shape[3] == 224 and x.shape[4] == 224
        return torch.stack([x[:, 0, 0].mean(dim=(1, 2)), x[:, 1, -1].mean(dim=(1, 2))], dim=1)


def _two_frame_video(first_red: int, last_green: int) -> np.ndarray:
    video = np.full((2, 8, 8, 3), 60, dtype=np.uint8)
    video[0, ..., 0], video[1, ..., 1] = first_red, last_green
    return video


def test_fvd_on_a_local_backbone_matches_the_hand_computation(tmp_path):
    torch.jit.save(torch.jit.script(TinyI3D()), str(tmp_path / "i3d.pt"))
    fvd = FVDMetric(str(tmp_path / "i3d.pt"))
    # feature values 2c/255 - 1; each set varies one feature at a time, so both covariances are
    # diagonal and FVD = |mu_r - mu_f|^2 + sum over features of (std_r - std_f)^2
    real = [(150, 100), (110, 100), (130, 120), (130, 80)]
    fake = [(200, 40), (180, 40), (190, 50), (190, 30)]
    for (r0, r1), (f0, f1) in zip(real, fake):
        fvd.add(_two_frame_video(f0, f1), _two_frame_video(r0, r1))
    features = {name: 2 * np.array(values, dtype=float) / 255 - 1 for name, values in (("real", real), ("fake", fake))}
    expected = sum((features["real"][:, i].mean() - features["fake"][:, i].mean()) ** 2 +
                   (features["real"][:, i].std(ddof=1) - features["fake"][:, i].std(ddof=1)) ** 2 for i in range(2))
    assert fvd.compute() == pytest.approx(expected, rel=1e-4)
    same = FVDMetric(str(tmp_path / "i3d.pt"))
    for r in real:
        same.add(_two_frame_video(*r), _two_frame_video(*r))
    assert same.compute() == pytest.approx(0.0, abs=1e-6)


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
    # every clip of the held-out data is scored: two (frames 0-8 and 8-16) of each of the 3 videos
    assert set(methods["student"]) == {"slide0", "slide1", "all"} and methods["student"]["all"]["clips"] == 6
    for method in methods.values():
        assert np.isfinite(method["all"]["psnr"]) and 0 < method["all"]["ssim"] <= 1
        assert method["all"]["lpips"] == SKIPPED and method["all"]["fvd"] == SKIPPED
    assert methods["copy_reference"]["all"]["psnr"] > 10  # static background, moving square
    grounding = report["grounding"]["all"]
    assert grounding["method"] == "student" and grounding["clips"] == 6 and np.isfinite(grounding["psnr_gap"])
    table = (tmp_path / "eval" / "results.md").read_text()
    assert "| copy_reference | all | 6 |" in table and "skipped (no local weights)" in table and "PSNR gap" in table
    saved = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert len(saved["clips"]) == 6 and saved["summary"]["methods"]["teacher"]["all"]["psnr"] == methods["teacher"]["all"]["psnr"]
    assert len(list((tmp_path / "eval" / "videos").glob("*.mp4"))) == 6


def test_the_students_sampling_schedule_can_be_evaluated_in_place_of_the_nodes(tmp_path):
    config = get_config("tiny")
    torch.manual_seed(0)
    checkpoint = save_world_model(tmp_path / "ckpt", RynnWorldTransformer(**config.transformer,
                                  null_text_tokens=config.null_text_tokens), build_vae(config.vae))
    data = DataConfig(kind="vitra", root=str(make_vitra_clips(tmp_path / "clips", clips=2)), clip_frames=9, stride=8)

    def run(name, schedule):
        return evaluate(EvalConfig(model="tiny", student_checkpoint=str(checkpoint), data=data, denoising_list=schedule,
                                   output_dir=str(tmp_path / name)))["methods"]

    node, one_step = run("node", None), run("one_step", [1000])
    assert one_step["copy_reference"] == node["copy_reference"]
    assert one_step["student"]["all"]["psnr"] != node["student"]["all"]["psnr"]  # the schedule reached the sampler
    assert json.loads((tmp_path / "one_step" / "results.json").read_text())["config"]["denoising_list"] == [1000]
    with pytest.raises(ValueError, match="strictly decreasing"):
        run("bad", [250, 500])


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


def test_the_card_states_the_targets_met_or_not_and_the_interaction_scores():
    from rynn_world.training.package_default import _beats_copy_reference, interaction_section

    summary = {"methods": {"copy_reference": {"all": {"psnr": 19.0, "ssim": 0.80}},
                           "student": {"all": {"psnr": 21.5, "ssim": 0.81}}},
               "grounding": {"all": {"psnr_gap": 0.7, "ssim_gap": 0.01}},
               "interaction": {"all": {"clips": 5, "copy_reference": 14.0, "student": 16.25}}}
    ok, verdict = _beats_copy_reference(summary, "student")
    assert ok and "(met: +2.50 dB)" in verdict and "SSIM above it (met)" in verdict and "+1 dB (not met)" in verdict
    summary["methods"]["student"]["all"]["ssim"] = 0.79
    ok, verdict = _beats_copy_reference(summary, "student")
    assert not ok and "SSIM above it (not met)" in verdict
    section = interaction_section(summary, "student")
    assert "5 held-out clips" in section and "16.25 dB" in section and "14.00 dB" in section
    assert interaction_section({"interaction": {}}, "student") == ""


def test_the_cards_compositing_section_sets_served_against_decoded_frames_on_the_same_clips(tmp_path):
    from rynn_world.training.package_default import COMPOSITING_SECTION, package_compositing

    def results(psnr, ssim, gap, stride=16):
        return {"config": {"model": "embedded_cpu", "data": {"episodes": [4, 12], "clip_frames": 17, "stride": stride}},
                "summary": {"methods": {"copy_reference": {"all": {"psnr": 20.63, "ssim": 0.820, "clips": 24}},
                                        "student_no_dmd": {"all": {"psnr": psnr, "ssim": ssim, "clips": 24}}},
                            "grounding": {"all": {"psnr_gap": gap, "ssim_gap": 0.03}}, "interaction": {}}}
    served, raw, other_clips = tmp_path / "served.json", tmp_path / "raw.json", tmp_path / "other.json"
    served.write_text(json.dumps(results(22.80, 0.848, 1.25)))
    raw.write_text(json.dumps(results(21.98, 0.802, 1.13)))
    other_clips.write_text(json.dumps(results(21.98, 0.802, 1.13, stride=64)))
    (tmp_path / "MODEL_CARD.md").write_text("# card\n\n## Tiny control encoder\nfigures\n## Limits\n- small\n")
    package_compositing(served, raw, "student_no_dmd", tmp_path / "eval_served_cpu.yaml", tmp_path)
    card = (tmp_path / "MODEL_CARD.md").read_text()
    assert card.index("## Tiny control encoder") < card.index(COMPOSITING_SECTION) < card.index("## Limits")
    assert "| `student_no_dmd` as decoded | 21.98 | 0.802 | +1.13 |" in card
    assert "| `student_no_dmd` composited (served) | 22.80 | 0.848 | +1.25 |" in card
    assert "| copy the reference | 20.63 | 0.820 |  |" in card and "Verdict (served): meets" in card
    assert "within 8 px (a seam of +-3 px)" in card.replace("\n", " ")
    package_compositing(raw, raw, "student_no_dmd", tmp_path / "eval_served_cpu.yaml", tmp_path)  # rewritten, not added
    card = (tmp_path / "MODEL_CARD.md").read_text()
    assert card.count(COMPOSITING_SECTION) == 1 and "Verdict (served): does NOT meet" in card
    with pytest.raises(ValueError, match="same clips"):
        package_compositing(served, other_clips, "student_no_dmd", tmp_path / "eval_served_cpu.yaml", tmp_path)


CONFIG_DIR = Path(__file__).resolve().parents[1] / "config"
RECIPE_CONFIGS = sorted(p.name for pattern in ("train_vae*_cpu.yaml", "train_stage2*_cpu.yaml", "distill*_cpu.yaml",
                                               "finetune*_cpu.yaml", "frontier*_cpu.yaml", "eval*_cpu.yaml")
                        for p in CONFIG_DIR.glob(pattern))


@pytest.mark.parametrize("name", RECIPE_CONFIGS)
def test_the_cards_recipe_names_the_module_that_reads_each_config(name):
    """The card lists each recipe config with the command that runs it: that module's config class must load it."""
    classes = {"rynn_world.evaluation.evaluate": EvalConfig, "rynn_world.training.distill": DistillConfig,
               "rynn_world.training.train": TrainConfig, "rynn_world.training.train_vae": VAETrainConfig}
    command = recipe_command(CONFIG_DIR / name)
    module = command.split()[2]
    load_config(classes[module], CONFIG_DIR / name)  # unknown keys would raise
    assert command.endswith(f"--config {CONFIG_DIR / name}")
