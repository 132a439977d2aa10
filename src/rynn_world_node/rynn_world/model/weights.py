"""Loading world-model weights from local directories (no downloads), with errors that name keys.

Accepted layouts:
- a diffusers transformer directory (config.json + *.safetensors, sharded or not), e.g. the
  `transformer/` folder of Wan2.2-TI2V-5B-Diffusers. A plain Wan checkpoint has no control branch;
  `allow_missing_control=True` then keeps the zero-initialised branch (the start of training).
- a RynnWorld checkpoint saved with `save_pretrained`, which carries control_patch_embedding,
  control_scale, control_stats.* and null_text_embedding.
Original (non-diffusers) Wan key names can be mapped first with `convert_original_wan_keys`.
"""

import inspect
import json
import re
from pathlib import Path

import torch
from safetensors.torch import load_file

from .placement import place
from .transformer import RynnWorldTransformer

CONTROL_BRANCH_PREFIXES = ("control_patch_embedding.", "control_scale", "control_stats.", "null_text_embedding")

# Original Wan (wan/modules/model.py) name -> diffusers name, applied in order as regexes.
_ORIGINAL_WAN_RULES = [
    (r"^time_embedding\.0\.", "condition_embedder.time_embedder.linear_1."),
    (r"^time_embedding\.2\.", "condition_embedder.time_embedder.linear_2."),
    (r"^text_embedding\.0\.", "condition_embedder.text_embedder.linear_1."),
    (r"^text_embedding\.2\.", "condition_embedder.text_embedder.linear_2."),
    (r"^time_projection\.1\.", "condition_embedder.time_proj."),
    (r"^head\.modulation$", "scale_shift_table"),
    (r"^head\.head\.", "proj_out."),
    (r"^blocks\.(\d+)\.modulation$", r"blocks.\1.scale_shift_table"),
    (r"^blocks\.(\d+)\.self_attn\.q\.", r"blocks.\1.attn1.to_q."),
    (r"^blocks\.(\d+)\.self_attn\.k\.", r"blocks.\1.attn1.to_k."),
    (r"^blocks\.(\d+)\.self_attn\.v\.", r"blocks.\1.attn1.to_v."),
    (r"^blocks\.(\d+)\.self_attn\.o\.", r"blocks.\1.attn1.to_out.0."),
    (r"^blocks\.(\d+)\.self_attn\.norm_q\.", r"blocks.\1.attn1.norm_q."),
    (r"^blocks\.(\d+)\.self_attn\.norm_k\.", r"blocks.\1.attn1.norm_k."),
    (r"^blocks\.(\d+)\.cross_attn\.q\.", r"blocks.\1.attn2.to_q."),
    (r"^blocks\.(\d+)\.cross_attn\.k\.", r"blocks.\1.attn2.to_k."),
    (r"^blocks\.(\d+)\.cross_attn\.v\.", r"blocks.\1.attn2.to_v."),
    (r"^blocks\.(\d+)\.cross_attn\.o\.", r"blocks.\1.attn2.to_out.0."),
    (r"^blocks\.(\d+)\.cross_attn\.norm_q\.", r"blocks.\1.attn2.norm_q."),
    (r"^blocks\.(\d+)\.cross_attn\.norm_k\.", r"blocks.\1.attn2.norm_k."),
    (r"^blocks\.(\d+)\.norm3\.", r"blocks.\1.norm2."),  # Wan's norm3 is the cross-attention norm
    (r"^blocks\.(\d+)\.ffn\.0\.", r"blocks.\1.ffn.net.0.proj."),
    (r"^blocks\.(\d+)\.ffn\.2\.", r"blocks.\1.ffn.net.2."),
]


def convert_original_wan_keys(state_dict: dict) -> dict:
    """Rename an original Wan2.x DiT state dict (keys like `blocks.0.self_attn.q.weight`,
    `time_embedding.0.weight`, `head.modulation`) to diffusers' WanTransformer3DModel names.

    patch_embedding.* and the RynnWorld control-branch keys are already identical and pass
    through. Keys prefixed with `model.` (some training checkpoints) are stripped first.
    """
    converted = {}
    for key, value in state_dict.items():
        new = key.removeprefix("model.")
        for pattern, replacement in _ORIGINAL_WAN_RULES:
            new, hits = re.subn(pattern, replacement, new)
            if hits:
                break
        converted[new] = value
    return converted


def read_state_dict(directory: Path) -> dict:
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no *.safetensors weights in {directory}")
    state = {}
    for file in files:
        state.update(load_file(str(file)))
    return state


def load_transformer(
    directory, device=None, dtype=torch.float32, allow_missing_control: bool = False, **config_overrides
) -> RynnWorldTransformer:
    """Build RynnWorldTransformer from a local diffusers-layout directory and check every key."""
    directory = Path(directory)
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{config_path} not found: expected a diffusers transformer directory")
    config = {k: v for k, v in json.loads(config_path.read_text()).items() if not k.startswith("_")}
    config.update(config_overrides)
    accepted = set(inspect.signature(RynnWorldTransformer.__init__).parameters)
    model = RynnWorldTransformer(**{k: v for k, v in config.items() if k in accepted})
    state = read_state_dict(directory)
    if any(k.startswith(("self_attn", "head.")) or ".self_attn." in k for k in state):
        state = convert_original_wan_keys(state)
    check_state_dict(model, state, allow_missing_control)
    model.load_state_dict(state, strict=False)
    return place(model, device, dtype).eval()


def check_state_dict(model: torch.nn.Module, state: dict, allow_missing_control: bool) -> None:
    """Raise one KeyError/ValueError listing every missing, unexpected or mis-shaped tensor."""
    expected = model.state_dict()
    missing = [k for k in expected if k not in state]
    if allow_missing_control:
        missing = [k for k in missing if not k.startswith(CONTROL_BRANCH_PREFIXES)]
    unexpected = [k for k in state if k not in expected]
    mismatched = [f"{k}: checkpoint {tuple(state[k].shape)} vs model {tuple(v.shape)}"
                  for k, v in expected.items() if k in state and state[k].shape != v.shape]
    problems = []
    if missing:
        problems.append(f"missing {len(missing)} keys: {_listing(missing)}")
    if unexpected:
        problems.append(f"unexpected {len(unexpected)} keys: {_listing(unexpected)}")
    if mismatched:
        problems.append(f"shape mismatch for {len(mismatched)} keys: {_listing(mismatched)}")
    if problems:
        hint = "" if allow_missing_control else " (plain Wan weights? pass allow_missing_control=True)"
        raise ValueError("world-model weights do not match the model: " + "; ".join(problems) + hint)


def _listing(items: list[str], limit: int = 12) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", ... (+{len(items) - limit} more)" if len(items) > limit else "")
