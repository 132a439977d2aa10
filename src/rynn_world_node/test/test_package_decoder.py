"""Shipping a VAE decoder fine-tuned under the packaged encoder: the VAE and the tiny decoder distilled
from it are swapped in together, the card gets the ceiling and the served scores, and a VAE with another
encoder (another latent space), a tiny decoder taught by another VAE or one under its bar is refused."""

import json
import shutil

import pytest
import torch

from rynn_common.config_io import save_yaml, to_dict
from rynn_world.data.latent_cache import encoder_fingerprint
from rynn_world.evaluation.evaluate import INTERACTION_PNG
from rynn_world.evaluation.side_by_side import SIDE_BY_SIDE_PNG
from rynn_world.model.configs import get_config
from rynn_world.model.tiny_decoder import TINY_DECODER_DIR, TinyVideoDecoder
from rynn_world.streaming import StreamingWorldModel
from rynn_world.training.config import DataConfig, EpisodeRoot, VAETrainConfig
from rynn_world.training.export import load_vae
from rynn_world.training.package_default import DECODER_SECTION, TINY_SECTION, package_decoder

CONFIG = get_config("tiny")


def _decoder_fine_tuned(vae_dir, out):
    """A copy of `vae_dir`'s VAE whose decoder weights moved and whose encoder did not."""
    vae = load_vae(CONFIG, str(vae_dir))
    with torch.no_grad():
        for parameter in [*vae.decoder.parameters(), *vae.post_quant_conv.parameters()]:
            parameter.add_(0.01)
    vae.save_pretrained(str(out / "vae"))
    return out


def _evaluation(path, psnr, data):
    scores = {"all": {"psnr": psnr, "ssim": 0.8, "lpips": "n/a", "clips": 3}}
    path.write_text(json.dumps({"config": {"data": data, "model": "tiny"}, "summary": {
        "methods": {"copy_reference": {"all": {"psnr": 20.0, "ssim": 0.85, "lpips": "n/a", "clips": 3}},
                    "student_no_dmd": scores},
        "grounding": {"all": {"psnr_gap": 0.5, "ssim_gap": 0.01}},
        "interaction": {"all": {"clips": 2, "copy_reference": 12.5, "student_no_dmd": psnr - 8.0}}}}))
    return path


def _ceiling(path, checkpoint, served_psnr):
    path.write_text(json.dumps({"data": "data/tasks", "episodes": [0, 1], "stride": 32, "clips": 3,
                                "copy_reference": {"psnr": 20.0, "ssim": 0.85},
                                "checkpoints": {str(checkpoint): {"reconstruction_psnr": served_psnr - 1,
                                                                  "served_psnr": served_psnr, "served_ssim": 0.87}}}))
    return path


@pytest.fixture
def shipped(tmp_path):
    target = tmp_path / "packaged"
    model = StreamingWorldModel(CONFIG, seed=3)
    model.transformer.save_pretrained(str(target / "transformer"))
    model.vae.save_pretrained(str(target / "vae"))
    torch.manual_seed(1)
    TinyVideoDecoder(latent_channels=CONFIG.latent_channels, latent_width=16,
                     frame_widths=(8, 8)).save_pretrained(str(target / TINY_DECODER_DIR))
    (target / "MODEL_CARD.md").write_text("# card\n\n## Model\nx\n\n## Limits\n- y\n")
    return target


def _tiny_run(tmp_path, teacher, psnr_db=31.0):
    run = tmp_path / "tiny_run" / "final"
    torch.manual_seed(2)
    TinyVideoDecoder(latent_channels=CONFIG.latent_channels, latent_width=16,
                     frame_widths=(8, 8)).save_pretrained(str(run / TINY_DECODER_DIR))
    scores = {"clips": 2, "psnr_vs_vae_db": psnr_db, "tiny_psnr_vs_frames_db": 25.0, "vae_psnr_vs_frames_db": 26.0}
    (run / "evaluation.json").write_text(json.dumps({
        "teacher_checkpoint": str(teacher), "held_out": {"encoded": scores}, "psnr_bar_db": 30.0,
        "meets_bar": psnr_db >= 30.0, "parameters": 1234,
        "config": {"data": {"episodes": [4, 12], "clip_frames": 17}, "steps": 10,
                   "decoder": {"latent_width": 16, "memory_blocks": 2, "frame_widths": [8, 8]}}}))
    return run


def test_a_decoder_fine_tune_ships_with_its_tiny_decoder_and_its_card_section(shipped, tmp_path):
    new = _decoder_fine_tuned(shipped, tmp_path / "vae_mix")
    assert encoder_fingerprint(load_vae(CONFIG, str(new))) == encoder_fingerprint(load_vae(CONFIG, str(shipped)))
    recipe = tmp_path / "train_vae_mix.yaml"
    save_yaml(recipe, to_dict(VAETrainConfig(model="tiny", frozen_encoder=True, crop=(64, 96), data=DataConfig(
        root="data/sim", clip_frames=17, stride=16, exclude_episodes=[4, 12],
        more_roots=[EpisodeRoot(root="data/tasks", stride=16, exclude_episodes=[4, 12, 15])]))))
    (tmp_path / "tiny.yaml").write_text("model: tiny\n")
    (tmp_path / "eval.yaml").write_text("model: tiny\noutput_dir: x\n")
    data = {"root": "data/tasks_eval", "episodes": None, "clip_frames": 17, "stride": 32}
    evaluation = (_evaluation(tmp_path / "before.json", 21.08, data), _evaluation(tmp_path / "after.json", 21.32, data))
    ceiling = (_ceiling(tmp_path / "ceiling_before.json", shipped, 24.10), _ceiling(tmp_path / "ceiling_after.json", new, 24.57))
    tiny = _tiny_run(tmp_path, new)
    (tmp_path / SIDE_BY_SIDE_PNG).write_bytes(b"\x89PNG picture")  # beside the first clip set's "after" results
    (tmp_path / INTERACTION_PNG).write_bytes(b"\x89PNG interaction")
    old_transformer = (shipped / "transformer" / "diffusion_pytorch_model.safetensors").read_bytes()

    package_decoder("tiny", new, tiny, [evaluation], [ceiling], "student_no_dmd",
                    [recipe, tmp_path / "tiny.yaml", tmp_path / "eval.yaml"], shipped)

    for part in ("vae", TINY_DECODER_DIR):
        source = new if part == "vae" else tiny
        assert (shipped / part / "diffusion_pytorch_model.safetensors").read_bytes() == \
            (source / part / "diffusion_pytorch_model.safetensors").read_bytes()
    assert (shipped / "transformer" / "diffusion_pytorch_model.safetensors").read_bytes() == old_transformer
    card = (shipped / "MODEL_CARD.md").read_text()
    assert card.count(DECODER_SECTION) == 1 and card.count(TINY_SECTION) == 1
    assert "| | before | 23.10 | 24.10 | 0.870 |" in card and "| | after (shipped) | 23.57 | 24.57 | 0.870 |" in card
    assert "| before | 21.08 |" in card and "| after (shipped) | 21.32 |" in card
    assert "`data/tasks`: every episode except [4, 12, 15], 17-frame clips every 16 frames" in card
    assert card.index(DECODER_SECTION) < card.index("## Limits") and card.endswith("- y\n")
    assert f"]({SIDE_BY_SIDE_PNG})" in card and (shipped / SIDE_BY_SIDE_PNG).read_bytes() == b"\x89PNG picture"
    assert f"]({INTERACTION_PNG})" in card and (shipped / INTERACTION_PNG).read_bytes() == b"\x89PNG interaction"
    assert "scores\n13.32 dB inside the moved objects' region" in card and "against 12.50 dB for copying" in card


def test_another_encoder_another_teacher_or_a_tiny_decoder_under_its_bar_is_refused(shipped, tmp_path):
    recipe = [tmp_path / "vae.yaml", tmp_path / "tiny.yaml", tmp_path / "eval.yaml"]
    save_yaml(recipe[0], to_dict(VAETrainConfig(model="tiny")))
    data = {"root": "data/tasks_eval", "episodes": None, "clip_frames": 17, "stride": 32}
    evaluation = (_evaluation(tmp_path / "before.json", 21.0, data), _evaluation(tmp_path / "after.json", 21.2, data))
    new = _decoder_fine_tuned(shipped, tmp_path / "vae_mix")
    ceiling = (_ceiling(tmp_path / "c0.json", shipped, 24.0), _ceiling(tmp_path / "c1.json", new, 24.5))
    before = {p: (shipped / p).read_bytes() for p in ("vae/diffusion_pytorch_model.safetensors",
                                                       f"{TINY_DECODER_DIR}/diffusion_pytorch_model.safetensors")}

    retrained = tmp_path / "retrained"
    StreamingWorldModel(CONFIG, seed=9).vae.save_pretrained(str(retrained / "vae"))
    with pytest.raises(ValueError, match="another VAE encoder"):
        package_decoder("tiny", retrained, _tiny_run(tmp_path, retrained), [evaluation], [ceiling], "student_no_dmd",
                        recipe, shipped)
    with pytest.raises(ValueError, match="whose VAE is not"):  # taught by the packaged decoder, not the new one
        package_decoder("tiny", new, _tiny_run(tmp_path, shipped), [evaluation], [ceiling], "student_no_dmd",
                        recipe, shipped)
    with pytest.raises(ValueError, match="does not meet the 30 dB bar"):
        package_decoder("tiny", new, _tiny_run(tmp_path, new, psnr_db=29.0), [evaluation], [ceiling],
                        "student_no_dmd", recipe, shipped)
    assert {p: (shipped / p).read_bytes() for p in before} == before, "a refused package changes nothing"
    shutil.rmtree(new)
