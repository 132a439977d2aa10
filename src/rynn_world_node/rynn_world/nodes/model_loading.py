"""Build the node's StreamingWorldModel from a checkpoint directory, the packaged default, or
(for tests and first runs only) random weights, and say which it was.

The weights are read by training.export's load_or_build_transformer and load_vae, the loaders
training and evaluation use, so the node serves exactly what was evaluated."""

from __future__ import annotations

from pathlib import Path

import torch

from rynn_common.description import D435I_COLOR, CameraIntrinsics
from rynn_world.checkpoints import packaged_checkpoint
from rynn_world.model.configs import WorldModelConfig
from rynn_world.model.tiny_decoder import TINY_DECODER_DIR, TinyVideoDecoder
from rynn_world.model.tiny_encoder import TINY_ENCODER_DIR, TinyControlEncoder
from rynn_world.streaming import StreamingWorldModel
from rynn_world.training.export import load_or_build_transformer, load_vae

CHOICES = ("auto", "vae", "tiny")  # of the decoder and of the control encoder


def _choose(kind: str, choice: str, directory: str, path: Path | None, device: str) -> bool:
    """Whether the `kind` is the checkpoint's distilled `directory` ("auto": on the CPU when it has one)."""
    if choice not in CHOICES:
        raise ValueError(f"{kind} must be one of {CHOICES}, got {choice!r}")
    present = path is not None and (path / directory).is_dir()
    if choice == "tiny" and not present:
        raise FileNotFoundError(f"{kind} 'tiny' needs {directory}/ in the checkpoint {path}")
    return choice == "tiny" or (choice == "auto" and present and device == "cpu")


def load_streaming_model(
    config: WorldModelConfig, checkpoint: str, device: str, seed: int = 0, vae_kernels: str = "reference",
    intrinsics: CameraIntrinsics = D435I_COLOR,
    decoder: str = "vae",
    encoder: str = "vae",
    static_camera: bool = True,
    batch_size: int = 1,
) -> tuple[StreamingWorldModel, str]:
    """(model, description). A checkpoint directory holds ``transformer/`` and ``vae/`` in
    diffusers layout (and optionally ``tiny_decoder/`` and ``tiny_control_encoder/``); a missing or
    mismatched one raises an error that names what is wrong.
    vae_kernels: "reference" (diffusers' kernels), "onednn" (CPU float32, ~4x faster VAE, equal
    up to float rounding) or "auto" (the node's default: "onednn" on the CPU, else "reference").
    intrinsics: the camera the skeletons are rendered in (the node's camera, as its CameraInfo says).
    decoder: "vae" (the VAE's decoder), "tiny" (the checkpoint's distilled tiny_decoder/, see its
    model card) or "auto" (the node's default: "tiny" on the CPU when the checkpoint has one).
    encoder: the same choice for the control frames' encoder ("tiny": the checkpoint's distilled
    tiny_control_encoder/); the VAE always encodes the reference image.
    static_camera: composite the frames on the reference (rynn_world.compositing) where the config sets a
    radius; False for a camera that moves.
    batch_size: independent streams stepped together (StreamingWorldModel; the data engine's batches)."""
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    if vae_kernels == "auto":
        vae_kernels = "onednn" if device == "cpu" else "reference"
    path = Path(checkpoint).expanduser() if checkpoint else packaged_checkpoint(config.name)
    tiny_decoder = _choose("decoder", decoder, TINY_DECODER_DIR, path, device)
    tiny_encoder = _choose("encoder", encoder, TINY_ENCODER_DIR, path, device)
    if path is None:
        model = StreamingWorldModel(config, intrinsics=intrinsics, device=device, dtype=dtype, seed=seed, vae_kernels=vae_kernels,
                                    static_camera=static_camera, batch_size=batch_size)
        return model, (
            f"random weights: no checkpoint given and none packaged for {config.name!r} "
            "(frames will not look like the scene; pass checkpoint:=<dir>)"
        )
    if not (path / "transformer").is_dir() or not (path / "vae").is_dir():
        raise FileNotFoundError(f"world-model checkpoint {path} needs transformer/ and vae/ subdirectories")
    transformer = load_or_build_transformer(config, str(path), device=device, dtype=dtype).eval()
    vae = load_vae(config, str(path), device=device, dtype=dtype)
    tiny = TinyVideoDecoder.from_pretrained(str(path / TINY_DECODER_DIR)) if tiny_decoder else None
    control_encoder = TinyControlEncoder.from_pretrained(str(path / TINY_ENCODER_DIR)) if tiny_encoder else None
    model = StreamingWorldModel(
        config, transformer=transformer, vae=vae, intrinsics=intrinsics, device=device, dtype=dtype, seed=seed,
        vae_kernels=vae_kernels, tiny_decoder=tiny, control_encoder=control_encoder, static_camera=static_camera,
        batch_size=batch_size,
    )
    which = f"checkpoint {path}" if checkpoint else f"packaged default checkpoint {path} (model card: {path / 'MODEL_CARD.md'})"
    return model, (f"{which}, {'tiny distilled' if tiny_encoder else 'VAE'} control encoder, "
                   f"{'tiny distilled' if tiny_decoder else 'VAE'} decoder"
                   f"{', composited on the reference' if model.compositor is not None else ''}")
