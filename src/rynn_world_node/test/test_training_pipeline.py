"""Stage 2, causal warm-up and DMD end-to-end on the tiny config (CPU, seconds), bit-exact resume,
and the differentiable training KV cache against the serving cache."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from rynn_common.config_io import ConfigError, load_config
from rynn_world.data.video import write_video
from rynn_world.model.configs import get_config
from rynn_world.model.kv_cache import TrainingKVCache
from rynn_world.model.transformer import RynnWorldTransformer
from rynn_world.training.config import DataConfig, DistillConfig, OptimConfig, RunConfig, TrainConfig
from rynn_world.training.distill import distill
from rynn_world.training.state import latest_checkpoint
from rynn_world.training.train import train

CFG = get_config("tiny")


def make_vitra_clips(root, clips=1, frames=20):
    """Small VITRA-style clips: a moving bright square and a hand that follows it."""
    root.mkdir(parents=True, exist_ok=True)
    K = np.array([[60.0, 0, 32], [0, 60.0, 32], [0, 0, 1]])
    for c in range(clips):
        video = np.full((frames, 64, 64, 3), 40, dtype=np.uint8)
        joints = np.zeros((frames, 2, 21, 3))
        for i in range(frames):
            x = 8 + (2 + c) * i % 40
            video[i, 24:40, x: x + 16] = (220, 180, 60)
            joints[i, :, :, 0] = (x + 8 - 32) / 60.0 * 0.5 + np.linspace(-0.02, 0.02, 21)
            joints[i, :, :, 1] = np.linspace(-0.05, 0.05, 21)
            joints[i, :, :, 2] = 0.5
        write_video(root / f"clip{c}.mp4", video, fps=16)
        np.savez(root / f"clip{c}.npz", joints=joints, intrinsics=K, task=f"slide{c % 2}")
    return root


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return make_vitra_clips(tmp_path_factory.mktemp("vitra"), clips=1)


def _stage2(data_root, out, steps, **run):
    data = DataConfig(kind="vitra", root=str(data_root), clip_frames=9, stride=8, latent_cache=str(out.parent / "latents"))
    return TrainConfig(model="tiny", stage=2, finetune="full", ema_decay=0.9, data=data,
                       optim=OptimConfig(lr=3e-3, warmup_steps=2),
                       run=RunConfig(output_dir=str(out), steps=steps, batch_size=2, progress=False, **run))


def _losses(run_dir, key):
    return [v for _, v in json.loads((run_dir / "losses.json").read_text())[key]]


def test_stage2_warmup_and_dmd_end_to_end(data_root, tmp_path):
    stage2 = train(_stage2(data_root, tmp_path / "stage2", steps=30), resume=None)
    losses = _losses(tmp_path / "stage2", "stage2/flow_matching")
    assert np.isfinite(losses).all() and np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])
    assert (stage2 / "transformer" / "config.json").is_file() and (stage2 / "vae" / "config.json").is_file()
    assert (tmp_path / "stage2" / "loss_curve.png").stat().st_size > 0
    assert any((tmp_path / "stage2" / "tensorboard").iterdir())

    cfg = DistillConfig(model="tiny", teacher_checkpoint=str(stage2), warmup_steps=16, warmup_lr=3e-3, dmd_steps=3,
                        generator_lr=1e-4, critic_lr=1e-3, critic_updates_per_generator=2,
                        data=DataConfig(kind="vitra", root=str(data_root), clip_frames=9, stride=8,
                                        latent_cache=str(tmp_path / "latents")),
                        optim=OptimConfig(warmup_steps=1), run=RunConfig(output_dir=str(tmp_path / "distill"),
                                                                           batch_size=2, progress=False, save_every=0))
    student = distill(cfg, resume=None)
    history = json.loads((tmp_path / "distill" / "losses.json").read_text())
    warmup = [v for _, v in history["distill/causal_flow_matching"]]
    assert np.mean(warmup[-4:]) < np.mean(warmup[:4])
    for key in ("distill/dmd_generator", "distill/critic_flow_matching", "distill/sample_mse_to_data"):
        assert len(history[key]) == 3 and np.isfinite([v for _, v in history[key]]).all()
    assert (student / "transformer").is_dir() and (tmp_path / "distill" / "final_warmup" / "transformer").is_dir()
    # the control statistics: updated by stage 2 and the warm-up (clean data), left alone by DMD
    stats = {name: {k: v for k, v in load_file(str(d / "transformer" / "diffusion_pytorch_model.safetensors")).items()
                    if k.startswith("control_stats.")}
             for name, d in (("stage2", stage2), ("warmup", tmp_path / "distill" / "final_warmup"), ("dmd", student))}
    assert not torch.equal(stats["stage2"]["control_stats.control_mean"], torch.zeros(CFG.latent_channels))
    assert not torch.equal(stats["warmup"]["control_stats.control_mean"], stats["stage2"]["control_stats.control_mean"])
    assert all(torch.equal(stats["dmd"][k], stats["warmup"][k]) for k in stats["warmup"]), "DMD moved the statistics"


def test_resume_from_a_checkpoint_is_bit_exact(data_root, tmp_path):
    train(_stage2(data_root, tmp_path / "straight", steps=6, save_every=3), resume=None)
    train(_stage2(data_root, tmp_path / "resumed", steps=3, save_every=3), resume=None)
    train(_stage2(data_root, tmp_path / "resumed", steps=6, save_every=3), resume="latest")
    a, b = latest_checkpoint(tmp_path / "straight"), latest_checkpoint(tmp_path / "resumed")
    assert a.name == b.name == "step_00000006"
    for name in ("modules", "optimizers", "ema"):
        x, y = load_file(str(a / f"{name}.safetensors")), load_file(str(b / f"{name}.safetensors"))
        assert x.keys() == y.keys()
        assert all(torch.equal(x[k], y[k]) for k in x), f"{name} differs after resume"


def test_training_cache_gives_the_serving_cache_outputs_and_gradients():
    torch.manual_seed(0)
    model = RynnWorldTransformer(**CFG.transformer, null_text_tokens=CFG.null_text_tokens)
    with torch.no_grad():
        model.control_patch_embedding.weight.normal_(0, 0.05)
    h, w = CFG.latent_size
    tokens = (h // 2) * (w // 2)
    latents = torch.randn(1, CFG.latent_channels, 6, h, w)
    rope = model.rope_table(h // 2, w // 2, "cpu")
    context = model.context_kv(model.embed_text(None, 1, latents.dtype))
    outputs = {}
    for name, cache in (("serving", model.new_cache(1, tokens, 1, 3)), ("training", TrainingKVCache(len(model.blocks), tokens, 1, 3))):
        outs = []
        for i in range(6):  # the window (3) wraps after frame 3
            out = model.forward_cached(latents[:, :, i: i + 1], 0.0 if i == 0 else 500.0, cache, context, rope)
            model.forward_cached(latents[:, :, i: i + 1], 0.0, cache, context, rope, commit=True)
            outs.append(out)
        outputs[name] = torch.cat(outs, dim=2)
    torch.testing.assert_close(outputs["training"], outputs["serving"], atol=1e-5, rtol=1e-5)
    # gradients reach the first block's input through the cache
    x0 = latents[:, :, :1].clone().requires_grad_(True)
    cache = TrainingKVCache(len(model.blocks), tokens, 1, 3)
    model.forward_cached(x0, 0.0, cache, context, rope, commit=True)
    model.forward_cached(latents[:, :, 1:2], 500.0, cache, context, rope).sum().backward()
    assert x0.grad is not None and x0.grad.abs().sum() > 0


def test_yaml_configs_load_and_reject_unknown_keys(tmp_path):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "config"
    cfg = load_config(TrainConfig, root / "train_stage2.yaml")
    assert cfg.lora_rank == 64 and cfg.optim.lr == 1e-5 and cfg.optim.warmup_steps == 200
    assert load_config(TrainConfig, root / "train_stage1.yaml").optim.lr == 2e-5
    ti2v = load_config(TrainConfig, root / "train_ti2v.yaml")
    assert (ti2v.stage, ti2v.finetune, ti2v.optim.lr, ti2v.run.steps) == ("ti2v", "full", 2e-5, 2000)
    distill_cfg = load_config(DistillConfig, root / "train_distill.yaml")
    assert (distill_cfg.generator_lr, distill_cfg.critic_lr, distill_cfg.critic_updates_per_generator) == (2e-6, 5e-7, 5)
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: tiny\nrun:\n  stepz: 3\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: unknown key\(s\) \['run.stepz'\]"):
        load_config(TrainConfig, bad)
    bad.write_text("optim:\n  betas: [0.9]\n")
    with pytest.raises(ConfigError, match="bad.yaml: optim.betas: expected 2 values"):
        load_config(TrainConfig, bad)


def test_a_decoder_only_vae_fine_tune_keeps_the_encoder_and_its_latent_statistics(data_root, tmp_path):
    from rynn_world.model.vae import build_vae
    from rynn_world.training.config import VAETrainConfig
    from rynn_world.training.export import save_world_model
    from rynn_world.training.train_vae import train_vae

    torch.manual_seed(0)
    init = save_world_model(tmp_path / "init", vae=build_vae(CFG.vae))
    data = DataConfig(kind="vitra", root=str(data_root), clip_frames=5, stride=4)

    def run(name, frozen):
        cfg = VAETrainConfig(model="tiny", init_checkpoint=str(init), frozen_encoder=frozen, clip_frames=5, data=data,
                             optim=OptimConfig(lr=1e-2, warmup_steps=1),
                             run=RunConfig(output_dir=str(tmp_path / name), steps=3, batch_size=2, progress=False))
        return load_file(str(train_vae(cfg, resume=None) / "vae" / "diffusion_pytorch_model.safetensors")), \
            json.loads((tmp_path / name / "final" / "vae" / "config.json").read_text())

    before = load_file(str(init / "vae" / "diffusion_pytorch_model.safetensors"))
    before_config = json.loads((init / "vae" / "config.json").read_text())
    vae = build_vae(CFG.vae)
    encoder = {f"{m}.{n}" for m, module in (("encoder", vae.encoder), ("quant_conv", vae.quant_conv))
               for n, _ in module.named_parameters()}
    frozen, frozen_config = run("frozen", True)
    assert all(torch.equal(frozen[k], before[k]) for k in encoder)
    assert any(not torch.equal(frozen[k], before[k]) for k in frozen if k not in encoder)
    assert frozen_config["latents_mean"] == before_config["latents_mean"]
    whole, whole_config = run("whole", False)  # the default trains both halves and re-measures the statistics
    assert any(not torch.equal(whole[k], before[k]) for k in encoder)
    assert whole_config["latents_mean"] != before_config["latents_mean"]
    with pytest.raises(ValueError, match="frozen_encoder needs init_checkpoint"):
        train_vae(VAETrainConfig(model="tiny", frozen_encoder=True, data=data,
                                 run=RunConfig(output_dir=str(tmp_path / "none"), steps=1, progress=False)))
