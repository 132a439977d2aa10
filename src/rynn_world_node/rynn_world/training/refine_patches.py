"""A transformer on a finer patch grid that starts from a trained one.

The embedded model's DiT cuts the 16x26 latent into 2x2 patches, so one token covers 16x16 pixels and a
finger is a fraction of a token. A finer patch (1x1: one token per latent cell, four times the tokens)
is the resolution point of the model-size / speed frontier (docs/world_model.md). Training it from
nothing is hours on two cores, so it starts from the trained weights:

- the patch embeddings (video and control): a fine token's embedding is the sum of the coarse kernel
  over the positions it folds, so a latent that is constant over each coarse patch embeds every fine
  token exactly as the coarse model embedded their patch;
- the output projection: a fine token predicts the mean of the coarse predictions for the cells it
  folds;
- everything else (blocks, time and text embedders, control statistics) is copied as it is.

The spatial RoPE positions count fine tokens, so distances read twice as far at the start; the fine-tune
adapts to that.

    python -m rynn_world.training.refine_patches --checkpoint DIR --patch 1 1 1 --out DIR
"""

import argparse
from pathlib import Path

import torch
from torch import nn

from ..model.configs import get_config
from ..model.transformer import RynnWorldTransformer
from .export import load_or_build_transformer, save_with_transformer


def fold_factors(coarse: tuple[int, ...], fine: tuple[int, ...]) -> tuple[int, int, int]:
    """How many fine patches fit along each axis of a coarse one; refuses a patch that is not finer."""
    coarse, fine = tuple(coarse), tuple(fine)
    if len(fine) != 3 or any(f < 1 for f in fine):
        raise ValueError(f"a patch size is three positive integers (t, h, w), got {fine}")
    if fine[0] != coarse[0]:
        raise ValueError(f"the temporal patch must stay {coarse[0]} (the causal blocks are latent frames), got {fine[0]}")
    if any(c % f for c, f in zip(coarse, fine)) or fine == coarse:
        raise ValueError(f"patch {fine} does not refine {coarse}: each axis must divide the trained patch's, and one be smaller")
    return tuple(c // f for c, f in zip(coarse, fine))


def _folded_kernel(weight: torch.Tensor, folds: tuple[int, int, int]) -> torch.Tensor:
    """(D, C, pt, ph, pw) -> (D, C, pt/ft, ph/fh, pw/fw): the sum over the positions each fine cell folds."""
    d, c, pt, ph, pw = weight.shape
    ft, fh, fw = folds
    return weight.view(d, c, ft, pt // ft, fh, ph // fh, fw, pw // fw).sum(dim=(2, 4, 6))


def _averaged_projection(linear: nn.Linear, coarse: tuple[int, ...], folds: tuple[int, int, int],
                         channels: int) -> tuple[torch.Tensor, torch.Tensor]:
    """proj_out's rows are laid out (pt, ph, pw, C); average those a fine cell folds."""
    pt, ph, pw = coarse
    ft, fh, fw = folds

    def fold(t: torch.Tensor) -> torch.Tensor:
        rest = t.shape[1:]
        return t.view(ft, pt // ft, fh, ph // fh, fw, pw // fw, channels, *rest).mean(dim=(0, 2, 4)).reshape(-1, *rest)

    return fold(linear.weight), fold(linear.bias)


def refine_patches(transformer: RynnWorldTransformer, patch_size: tuple[int, int, int]) -> RynnWorldTransformer:
    """A copy of `transformer` on the finer `patch_size` grid (see the module docstring)."""
    coarse = tuple(transformer.config.patch_size)
    folds = fold_factors(coarse, patch_size)
    config = {k: v for k, v in transformer.config.items() if not k.startswith("_")} | {"patch_size": tuple(patch_size)}
    fine = RynnWorldTransformer(**config)
    resized = ("patch_embedding.", "control_patch_embedding.", "proj_out.")
    state = {k: v for k, v in transformer.state_dict().items() if not k.startswith(resized)}
    missing, unexpected = fine.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith(resized) for k in missing):
        raise ValueError(f"the refined transformer does not match the trained one: {missing=} {unexpected=}")
    with torch.no_grad():
        for name in ("patch_embedding", "control_patch_embedding"):
            old, new = getattr(transformer, name), getattr(fine, name)
            new.weight.copy_(_folded_kernel(old.weight, folds))
            new.bias.copy_(old.bias)
        weight, bias = _averaged_projection(transformer.proj_out, coarse, folds, transformer.config.out_channels)
        fine.proj_out.weight.copy_(weight)
        fine.proj_out.bias.copy_(bias)
    return fine


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, type=Path, help="a checkpoint directory (transformer/ + vae/ ...)")
    parser.add_argument("--config", default="embedded_cpu", help="the world-model config it was trained as")
    parser.add_argument("--patch", required=True, type=int, nargs=3, metavar=("T", "H", "W"),
                        help="the finer patch size, e.g. 1 1 1")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    transformer = load_or_build_transformer(get_config(args.config), str(args.checkpoint))
    fine = refine_patches(transformer, tuple(args.patch))
    save_with_transformer(args.checkpoint, args.out, fine)
    params = sum(p.numel() for p in fine.parameters())
    print(f"{args.out}: patch {tuple(transformer.config.patch_size)} -> {tuple(args.patch)}, {params / 1e6:.2f} M parameters")


if __name__ == "__main__":
    main()
