"""Local weight loading: diffusers Wan layout, RynnWorld checkpoints, clear key errors, key renaming."""

import pytest
import torch
from diffusers import WanTransformer3DModel
from safetensors.torch import save_file

from rynn_world.model.configs import get_config
from rynn_world.model.transformer import RynnWorldTransformer
from rynn_world.model.weights import convert_original_wan_keys, load_transformer

CFG = get_config("tiny").transformer


@pytest.fixture
def wan_dir(tmp_path):
    torch.manual_seed(0)
    WanTransformer3DModel(**CFG).save_pretrained(tmp_path / "wan")
    return tmp_path / "wan"


@torch.no_grad()
def test_loads_plain_wan_with_zero_control_and_matches_it(wan_dir):
    with pytest.raises(ValueError, match="missing .*control_patch_embedding.weight"):
        load_transformer(wan_dir)
    model = load_transformer(wan_dir, allow_missing_control=True, null_text_tokens=4)
    base = WanTransformer3DModel.from_pretrained(wan_dir).eval()
    g = torch.Generator().manual_seed(1)
    x, text = torch.randn(1, CFG["in_channels"], 2, 8, 8, generator=g), torch.randn(1, 3, CFG["text_dim"], generator=g)
    assert (model(x, 300.0, text_embeds=text) - base(x, torch.tensor([300.0]), text).sample).abs().max() < 1e-4


def test_round_trip_keeps_control_branch_and_statistics(tmp_path):
    torch.manual_seed(0)
    model = RynnWorldTransformer(**CFG, null_text_tokens=4)
    with torch.no_grad():
        model.control_scale.fill_(0.37)
        model.control_stats.latent_std.fill_(2.5)
    model.save_pretrained(tmp_path / "rynn")
    loaded = load_transformer(tmp_path / "rynn")
    assert loaded.control_scale.item() == pytest.approx(0.37)
    assert torch.equal(loaded.control_stats.latent_std, torch.full_like(loaded.control_stats.latent_std, 2.5))


def test_mismatched_and_missing_weights_are_named(wan_dir, tmp_path):
    state = WanTransformer3DModel.from_pretrained(wan_dir).state_dict()
    state["proj_out.weight"] = torch.zeros(3, 3)
    del state["blocks.1.ffn.net.2.bias"]
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text((wan_dir / "config.json").read_text())
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp_path / "bad" / "model.safetensors"))
    with pytest.raises(ValueError) as err:
        load_transformer(tmp_path / "bad", allow_missing_control=True)
    assert "blocks.1.ffn.net.2.bias" in str(err.value) and "proj_out.weight: checkpoint (3, 3)" in str(err.value)
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_transformer(tmp_path / "nowhere")


def test_original_wan_key_names_convert_to_diffusers():
    names = ["blocks.3.self_attn.q.weight", "blocks.3.cross_attn.o.bias", "blocks.3.norm3.weight",
             "blocks.3.ffn.0.weight", "blocks.3.modulation", "head.modulation", "head.head.weight",
             "time_embedding.0.weight", "time_projection.1.bias", "text_embedding.2.weight", "patch_embedding.weight"]
    converted = list(convert_original_wan_keys(dict.fromkeys(names, None)))
    assert converted == ["blocks.3.attn1.to_q.weight", "blocks.3.attn2.to_out.0.bias", "blocks.3.norm2.weight",
                         "blocks.3.ffn.net.0.proj.weight", "blocks.3.scale_shift_table", "scale_shift_table",
                         "proj_out.weight", "condition_embedder.time_embedder.linear_1.weight",
                         "condition_embedder.time_proj.bias", "condition_embedder.text_embedder.linear_2.weight",
                         "patch_embedding.weight"]
    model_keys = set(RynnWorldTransformer(**CFG, null_text_tokens=4).state_dict())
    assert set(converted) - {"blocks.3.attn1.to_q.weight", "blocks.3.attn2.to_out.0.bias", "blocks.3.norm2.weight",
                             "blocks.3.ffn.net.0.proj.weight", "blocks.3.scale_shift_table"} <= model_keys
