"""Training stages and their parts: the TI2V stage (no action, control branch untouched), the null
text embedding's initialisation, which parameters the LoRA path trains, and the EMA arithmetic."""

import pytest
import torch
from safetensors.torch import load_file, save_file
from test_training_pipeline import make_vitra_clips

from rynn_world.model.configs import get_config
from rynn_world.model.control import ControlAlignment
from rynn_world.model.transformer import RynnWorldTransformer
from rynn_world.model.vae import build_vae
from rynn_world.training.config import DataConfig, OptimConfig, RunConfig, TrainConfig
from rynn_world.training.ema import EMA
from rynn_world.training.export import NULL_TEXT_FILE, load_or_build_transformer, save_null_text_embedding, save_world_model
from rynn_world.training.lora import export_transformer
from rynn_world.training.losses import flow_matching_loss
from rynn_world.training.train import build_trainable, train

CFG = get_config("tiny")
TEXT_DIM = CFG.transformer["text_dim"]
CONTROL_KEYS = ("control_patch_embedding.weight", "control_patch_embedding.bias", "control_scale",
                "control_stats.control_mean", "control_stats.control_std", "control_stats.latent_mean",
                "control_stats.latent_std")


def _fresh(seed=0):
    torch.manual_seed(seed)
    return RynnWorldTransformer(**CFG.transformer, null_text_tokens=CFG.null_text_tokens)


def _checkpoint_with_a_live_control_branch(directory):
    model = _fresh()
    with torch.no_grad():
        model.control_patch_embedding.weight.normal_(0, 0.1)
        model.control_scale.fill_(0.3)
        model.control_stats.control_mean.fill_(0.5)
        model.control_stats.control_std.fill_(0.3)
    return save_world_model(directory, model, build_vae(CFG.vae))


@pytest.mark.parametrize("with_prompts", [False, True])
def test_ti2v_stage_trains_without_ever_running_the_control_branch(tmp_path, monkeypatch, with_prompts):
    init = _checkpoint_with_a_live_control_branch(tmp_path / "init")
    root = make_vitra_clips(tmp_path / "clips", clips=1)  # task "slide0"
    prompts = None
    if with_prompts:
        prompts = str(tmp_path / "prompts.safetensors")
        save_file({"slide0": torch.randn(3, TEXT_DIM)}, prompts)

    def control_branch_used(*args, **kwargs):
        raise AssertionError("the TI2V stage ran the control branch")

    monkeypatch.setattr(ControlAlignment, "forward", control_branch_used)
    monkeypatch.setattr(ControlAlignment, "observe", control_branch_used)
    cfg = TrainConfig(model="tiny", stage="ti2v", init_checkpoint=str(init), finetune="full", ema_decay=0.9,
                      prompt_embeddings=prompts, data=DataConfig(kind="vitra", root=str(root), clip_frames=9, stride=8),
                      optim=OptimConfig(lr=3e-3, warmup_steps=1),
                      run=RunConfig(output_dir=str(tmp_path / "ti2v"), steps=4, batch_size=2, progress=False))
    final = train(cfg, resume=None)
    before = load_file(str(init / "transformer" / "diffusion_pytorch_model.safetensors"))
    after = load_file(str(final / "transformer" / "diffusion_pytorch_model.safetensors"))
    for key in CONTROL_KEYS:
        assert torch.equal(after[key], before[key]), f"{key} changed in the TI2V stage"
    assert not torch.equal(after["proj_out.weight"], before["proj_out.weight"])  # the rest did train
    # the text the clips were trained with: their task prompt (the null text untouched) or the null text
    assert torch.equal(after["null_text_embedding"], before["null_text_embedding"]) == with_prompts
    losses = (tmp_path / "ti2v" / "losses.json").read_text()
    assert '"ti2v/flow_matching"' in losses


def test_prompts_must_cover_every_task_and_belong_to_the_ti2v_stage(tmp_path):
    init = save_world_model(tmp_path / "init", _fresh(), build_vae(CFG.vae))
    root = make_vitra_clips(tmp_path / "clips", clips=2)  # tasks slide0, slide1
    prompts = tmp_path / "prompts.safetensors"
    save_file({"slide0": torch.randn(3, TEXT_DIM)}, str(prompts))
    cfg = TrainConfig(model="tiny", stage="ti2v", init_checkpoint=str(init), finetune="full",
                      prompt_embeddings=str(prompts), data=DataConfig(kind="vitra", root=str(root), clip_frames=9, stride=8),
                      run=RunConfig(output_dir=str(tmp_path / "ti2v"), steps=1, progress=False))
    with pytest.raises(ValueError, match=r"no prompt embedding for the tasks \['slide1'\]"):
        train(cfg, resume=None)
    cfg.stage = 2
    with pytest.raises(ValueError, match="TI2V stage only"):
        train(cfg, resume=None)


def test_unknown_stage_is_refused():
    cfg = TrainConfig(model="tiny", stage=3, finetune="full")
    with pytest.raises(ValueError, match="stage must be one of"):
        build_trainable(cfg, "cpu")


def test_null_text_embedding_starts_from_the_checkpoints_empty_prompt_else_zeros(tmp_path):
    base = tmp_path / "base"
    plain = _fresh()
    state = {k: v for k, v in plain.state_dict().items() if k != "null_text_embedding"}  # a base model has none
    (base / "transformer").mkdir(parents=True)
    plain.save_config(str(base / "transformer"))
    save_file(state, str(base / "transformer" / "diffusion_pytorch_model.safetensors"))

    zeros = load_or_build_transformer(CFG, str(base), allow_missing_control=True)
    assert torch.equal(zeros.null_text_embedding, torch.zeros(CFG.null_text_tokens, TEXT_DIM))

    empty_prompt = torch.randn(1, 2, TEXT_DIM)  # 2 real tokens, the rest zero-padded as Wan pads prompts
    save_null_text_embedding(base, empty_prompt)
    assert (base / NULL_TEXT_FILE).is_file()
    loaded = load_or_build_transformer(CFG, str(base), allow_missing_control=True)
    torch.testing.assert_close(loaded.null_text_embedding[:2], empty_prompt[0], rtol=0, atol=0)
    assert torch.equal(loaded.null_text_embedding[2:], torch.zeros(CFG.null_text_tokens - 2, TEXT_DIM))

    trained = tmp_path / "trained"  # weights that carry a (trained) null text embedding keep it
    save_world_model(trained, _fresh(1))
    save_null_text_embedding(trained, empty_prompt)
    torch.testing.assert_close(load_or_build_transformer(CFG, str(trained)).null_text_embedding,
                               _fresh(1).null_text_embedding, rtol=0, atol=0)

    save_null_text_embedding(base, torch.randn(CFG.null_text_tokens + 1, TEXT_DIM))
    with pytest.raises(ValueError, match="prompt_embeds has shape"):
        load_or_build_transformer(CFG, str(base), allow_missing_control=True)


@pytest.mark.parametrize("stage", [1, 2, "ti2v"])
def test_lora_trains_exactly_the_intended_parameters(stage):
    torch.manual_seed(0)
    model, ema = build_trainable(TrainConfig(model="tiny", stage=stage, finetune="lora", lora_rank=4), "cpu")
    assert ema is None
    base = model.get_base_model()
    frozen_before = {n: p.detach().clone() for n, p in base.named_parameters()}
    trainable = {n for n, p in base.named_parameters() if p.requires_grad}
    intended = {"control_patch_embedding.weight", "control_patch_embedding.bias", "control_scale"} if stage != "ti2v" else set()
    if stage == 1:
        intended |= {"patch_embedding.weight", "patch_embedding.bias"}
    lora = {n for n in trainable if ".lora_A." in n or ".lora_B." in n}
    assert trainable - lora == intended
    targets_per_block = 10  # self + cross attention q, k, v, out and two FFN linears
    assert len(lora) == 2 * targets_per_block * len(base.blocks)

    g = torch.Generator().manual_seed(1)
    h, w = CFG.latent_size
    latents, control = torch.randn(2, 8, 5, h, w, generator=g), torch.randn(2, 8, 5, h, w, generator=g)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(3):  # LoRA B starts at zero, so A moves from the second step on
        loss = flow_matching_loss(model, latents, None if stage == "ti2v" else control, torch.tensor([0.4, 0.8]),
                                  torch.randn(latents.shape, generator=g))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    changed = {n for n, p in base.named_parameters() if not torch.equal(p, frozen_before[n])}
    assert changed == trainable

    with torch.no_grad():
        expected = model(latents, 400.0, control=control)
        merged = export_transformer(model)
        torch.testing.assert_close(merged(latents, 400.0, control=control), expected, atol=1e-5, rtol=1e-5)
    assert not any(".lora_" in n for n, _ in merged.named_parameters())


def test_ema_follows_the_ramped_decay_by_hand():
    weight = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    ema = EMA([("w", weight)], decay=0.3)
    expected = torch.tensor([1.0, -2.0])
    for n, value in enumerate(([3.0, 0.0], [5.0, 4.0], [-1.0, 2.0]), start=1):
        with torch.no_grad():
            weight.copy_(torch.tensor(value))
        ema.update([("w", weight)])
        decay = min(0.3, (1 + n) / (10 + n))  # 2/11, 3/12, then capped at 0.3 (4/13 > 0.3)
        expected = decay * expected + (1 - decay) * torch.tensor(value)
        torch.testing.assert_close(ema.shadow["w"], expected)
    assert ema.updates == 3
    # the first element by hand: decay 2/11, then 3/12, then 0.3
    first = 2 / 11 * 1 + 9 / 11 * 3
    second = 3 / 12 * first + 9 / 12 * 5
    assert ema.shadow["w"][0].item() == pytest.approx(0.3 * second + 0.7 * -1.0)
    module = torch.nn.Module()
    module.w = weight
    ema.copy_to(module)
    torch.testing.assert_close(module.w.detach(), expected)
