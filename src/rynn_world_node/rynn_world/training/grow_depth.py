"""A deeper transformer that starts exactly where a trained one is: new blocks that add nothing.

A Wan block adds its self-attention, cross-attention and feed-forward outputs to the residual
stream, each through one output projection. With those three projections zero, the block is the
identity, so the grown model's output equals the trained model's bit for bit, and fine-tuning
spends its steps on what the extra depth can add rather than on relearning what the small model
knew (the model-size frontier of docs/world_model.md is measured this way on two CPU cores).

    python -m rynn_world.training.grow_depth --checkpoint DIR --layers 6 --out DIR

Copies every other part of the checkpoint (vae/, tiny_decoder/, tiny_control_encoder/), so the
output is a checkpoint the node serves and the fine-tune starts from.
"""

import argparse
import copy
from pathlib import Path

import torch

from ..model.configs import get_config
from ..model.transformer import RynnWorldTransformer
from .export import load_or_build_transformer, save_with_transformer


def identity_block(template: torch.nn.Module) -> torch.nn.Module:
    """A copy of `template` whose three residual branches output zero."""
    block = copy.deepcopy(template)
    with torch.no_grad():
        for projection in (block.attn1.to_out[0], block.attn2.to_out[0], block.ffn.net[-1]):
            projection.weight.zero_()
            projection.bias.zero_()
    return block


def grown_positions(old_layers: int, new_layers: int) -> list[int | None]:
    """The new block order: the index of each trained block, None for an identity block, spread
    evenly so every trained block keeps a new one after it where the count allows."""
    if new_layers < old_layers:
        raise ValueError(f"cannot grow {old_layers} layers to {new_layers}")
    order: list[int | None] = []
    added = 0
    for i in range(old_layers):
        order.append(i)
        due = (new_layers - old_layers) * (i + 1) // old_layers
        order.extend([None] * (due - added))
        added = due
    return order


def grow_depth(transformer: RynnWorldTransformer, layers: int) -> RynnWorldTransformer:
    """A `layers`-deep copy of `transformer`; each new block copies its trained predecessor's
    weights (so its attention starts somewhere sensible) with its outputs zeroed."""
    order = grown_positions(len(transformer.blocks), layers)
    config = {k: v for k, v in transformer.config.items() if not k.startswith("_")} | {"num_layers": layers}
    grown = RynnWorldTransformer(**config)
    state = {k: v for k, v in transformer.state_dict().items() if not k.startswith("blocks.")}
    missing, unexpected = grown.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith("blocks.") for k in missing):
        raise ValueError(f"the grown transformer does not match the trained one: {missing=} {unexpected=}")
    blocks = []
    previous = transformer.blocks[0]
    for index in order:
        if index is None:
            blocks.append(identity_block(previous))
        else:
            previous = transformer.blocks[index]
            blocks.append(copy.deepcopy(previous))
    grown.blocks = torch.nn.ModuleList(blocks)
    return grown


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, type=Path, help="a checkpoint directory (transformer/ + vae/ ...)")
    parser.add_argument("--config", default="embedded_cpu", help="the world-model config it was trained as")
    parser.add_argument("--layers", required=True, type=int, help="transformer blocks after growing")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    transformer = load_or_build_transformer(get_config(args.config), str(args.checkpoint))
    grown = grow_depth(transformer, args.layers)
    save_with_transformer(args.checkpoint, args.out, grown)
    params = sum(p.numel() for p in grown.parameters())
    print(f"{args.out}: {len(transformer.blocks)} -> {args.layers} blocks, {params / 1e6:.2f} M parameters")


if __name__ == "__main__":
    main()
