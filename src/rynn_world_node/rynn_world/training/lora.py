"""LoRA (peft) on the DiT's attention and FFN projections, with the control branch trained in full.

Stage 1 additionally trains the video patch embedding (paper Sec. 5.1: "patch embedding layers and
LoRA weights"); stage 2 continues the LoRA weights and the control branch; the TI2V stage trains
the LoRA weights only (no action, so the control branch stays as it is).
"""

import torch
from peft import LoraConfig, get_peft_model

from ..model.transformer import RynnWorldTransformer

# Wan block projections: self/cross attention q, k, v, out and the two FFN linears.
LORA_TARGETS = ["to_q", "to_k", "to_v", "to_out.0", "ffn.net.0.proj", "ffn.net.2"]
CONTROL_BRANCH = ("control_patch_embedding.", "control_scale")


def add_lora(transformer: RynnWorldTransformer, rank: int = 64, train_patch_embedding: bool = False,
             train_control_branch: bool = True):
    """The peft-wrapped model; only LoRA, the control branch (and the patch embedding) train."""
    config = LoraConfig(r=rank, lora_alpha=rank, target_modules=LORA_TARGETS, init_lora_weights=True)
    model = get_peft_model(transformer, config)
    trainable = (CONTROL_BRANCH if train_control_branch else ()) + (("patch_embedding.",) if train_patch_embedding else ())
    base = model.get_base_model()
    for name, param in base.named_parameters():
        if name.startswith(trainable):
            param.requires_grad_(True)
    return model


def export_transformer(model) -> RynnWorldTransformer:
    """Plain RynnWorldTransformer (LoRA merged in) for save_pretrained / serving."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    for param in model.parameters():
        param.requires_grad_(False)
    return model.eval()


def trainable_named_parameters(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]
