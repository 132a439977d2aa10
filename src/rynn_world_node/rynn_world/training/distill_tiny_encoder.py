"""Distil a tiny streaming control encoder from a checkpoint's VAE encoder, and measure it end to end.

The teacher is the full VAE encoder run as serving runs it (StreamingVAEEncoder, onednn kernels) on
each clip's control video (its skeleton renders, frame 0 the null action as after a reset). The tiny
encoder learns the teacher's normalised latents (MSE, optionally + L1) over whole clips from a
stream start. Held out: the latent error, and what matters, the live path end to end: for each clip
StreamingWorldModel (the teacher checkpoint's transformer, VAE and tiny decoder when it has one, same
seed) streams once with the VAE's control encoder and once with the tiny one; both streams are scored
against the recorded frames (PSNR) and against each other. It ships when the tiny encoder's PSNR is
within psnr_tolerance_db of the VAE's.

    python -m rynn_world.training.distill_tiny_encoder --config src/rynn_world_node/config/tiny_encoder_cpu.yaml
"""

import json
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from rynn_common.config_io import to_dict

from ..checkpoints import packaged_checkpoint
from ..data.latent_cache import control_video
from ..evaluation.generation import stream_model
from ..evaluation.metrics import psnr
from ..model.configs import WorldModelConfig, get_config
from ..model.tiny_decoder import TINY_DECODER_DIR, TinyVideoDecoder
from ..model.tiny_encoder import TINY_ENCODER_DIR, StreamingTinyControlEncoder, TinyControlEncoder
from ..model.vae import StreamingVAEEncoder, rgb_to_tensor, use_vae_kernels
from ..streaming import StreamingWorldModel
from .config import TinyEncoderConfig, run_from_command_line
from .datasets import build_clip_dataset
from .distill_tiny_decoder import teacher_fingerprint, to_signed
from .export import load_or_build_transformer, load_vae
from .loop import TrainingLoop, adamw, lr_schedule, make_accelerator, step_generator


def teacher_directory(cfg: TinyEncoderConfig) -> Path:
    """The checkpoint whose vae/ is the teacher and whose transformer/ the end-to-end evaluation streams with."""
    path = Path(cfg.teacher_checkpoint) if cfg.teacher_checkpoint else packaged_checkpoint(cfg.model)
    if path is None or not (path / "vae").is_dir() or not (path / "transformer").is_dir():
        raise FileNotFoundError(f"teacher checkpoint {path} needs vae/ and transformer/ (teacher_checkpoint in the config)")
    return path


def build_targets(data, cfg: TinyEncoderConfig, teacher: Path, cache: Path, desc: str) -> list[dict]:
    """Every clip's control video (T, H, W, 3) uint8 and the VAE's (z, n, h, w) latents of it, cached in
    `cache` with the fingerprint of the teacher's weights and the clips (other ones are recomputed)."""
    fingerprint = teacher_fingerprint(teacher, data, with_transformer=False)
    if cache.is_file():
        cached = torch.load(cache, weights_only=False)
        if cached.get("fingerprint") == fingerprint:
            return cached["targets"]
    config = get_config(cfg.model)
    vae = use_vae_kernels(load_vae(config, str(teacher)), "onednn")
    clips = build_clip_dataset(data, config)
    targets = []
    for i in tqdm(range(len(clips)), desc=desc, dynamic_ncols=True, disable=not cfg.run.progress):
        control = control_video(clips[i].skeleton)
        latents = StreamingVAEEncoder(vae).push(rgb_to_tensor(control))
        targets.append({"control": control, "latents": latents[0].float()})
    cache.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"fingerprint": fingerprint, "targets": targets}, cache)
    return targets


@torch.no_grad()
def latent_scores(encoder: TinyControlEncoder, targets: list[dict]) -> dict:
    """MSE of the tiny encoder's latents against the VAE's, and its RMS relative to the latents' RMS."""
    errors, powers = [], []
    for item in targets:
        latents = StreamingTinyControlEncoder(encoder).push(rgb_to_tensor(item["control"]))[0]
        errors.append(float((latents - item["latents"]).square().mean()))
        powers.append(float(item["latents"].square().mean()))
    return {"clips": len(targets), "mse": float(np.mean(errors)),
            "relative_rms": float(np.sqrt(np.mean(errors) / np.mean(powers)))}


@torch.no_grad()
def end_to_end_scores(encoder: TinyControlEncoder, data, teacher: Path, config: WorldModelConfig, seed: int,
                      progress: bool) -> dict:
    """Mean PSNR of the live stream against the recorded frames with each control encoder, and between them."""
    transformer = load_or_build_transformer(config, str(teacher)).eval()
    vae = use_vae_kernels(load_vae(config, str(teacher)), "onednn")
    decoder_dir = teacher / TINY_DECODER_DIR
    tiny_decoder = TinyVideoDecoder.from_pretrained(str(decoder_dir)) if decoder_dir.is_dir() else None
    clips = build_clip_dataset(data, config)
    rows = []
    for i in tqdm(range(len(clips)), desc="end to end (held out)", dynamic_ncols=True, disable=not progress):
        clip = clips[i]
        streams = [stream_model(StreamingWorldModel(config, transformer=transformer, vae=vae, seed=seed + i,
                                                    vae_kernels="onednn", tiny_decoder=tiny_decoder,
                                                    control_encoder=control_encoder), clip.frames[0], clip.skeleton)
                   for control_encoder in (None, encoder)]
        recorded = clip.frames[1: 1 + len(streams[0])]
        rows.append((psnr(streams[0], recorded), psnr(streams[1], recorded), psnr(streams[1], streams[0])))
    vae_db, tiny_db, between_db = np.mean(rows, axis=0)
    return {"clips": len(rows), "decoder": "tiny" if tiny_decoder is not None else "vae",
            "vae_encoder_psnr_vs_frames_db": float(vae_db), "tiny_encoder_psnr_vs_frames_db": float(tiny_db),
            "tiny_vs_vae_stream_psnr_db": float(between_db)}


def distill_tiny_encoder(cfg: TinyEncoderConfig, resume: str | None = "latest") -> Path:
    accelerator = make_accelerator(cfg.run)
    output = Path(cfg.run.output_dir)
    teacher = teacher_directory(cfg)
    train = build_targets(cfg.data, cfg, teacher, output / "targets_train.pt", "teacher encodes (train)")
    held_out = build_targets(cfg.eval_data, cfg, teacher, output / "targets_held_out.pt", "teacher encodes (held out)")
    config = get_config(cfg.model)
    torch.manual_seed(cfg.run.seed)
    encoder = TinyControlEncoder(latent_channels=config.latent_channels, temporal_downsample=config.temporal_compression,
                                 spatial_downsample=config.spatial_compression, **cfg.encoder)
    encoder = encoder.to(memory_format=torch.channels_last).train()  # oneDNN's fast layout on the CPU
    optimizer = adamw(encoder.parameters(), cfg.optim)
    scheduler = lr_schedule(optimizer, cfg.optim, cfg.run.steps)
    loop = TrainingLoop(cfg.run, accelerator, {"tiny_encoder": encoder}, {"tiny_encoder": optimizer},
                        {"tiny_encoder": scheduler}, name="tiny encoder")
    if resume:
        loop.resume(resume)

    def step_fn(step: int) -> dict[str, float]:
        generator = step_generator(cfg.run.seed, step, accelerator.process_index, "cpu")
        picks = torch.randint(len(train), (cfg.run.batch_size,), generator=generator).tolist()
        frames = torch.stack([to_signed(train[i]["control"]) for i in picks])
        target = torch.stack([train[i]["latents"] for i in picks])
        latents, _ = encoder(frames)
        mse = (latents - target).square().mean()
        loss = cfg.mse_weight * mse + cfg.l1_weight * (latents - target).abs().mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(encoder.parameters(), cfg.optim.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        return {"tiny_encoder/loss": loss.item(), "tiny_encoder/mse": mse.item()}

    loop.run(cfg.run.steps, step_fn)
    final = output / "final"
    encoder.eval().save_pretrained(str(final / TINY_ENCODER_DIR), safe_serialization=True)
    latents = latent_scores(encoder, held_out)
    stream = end_to_end_scores(encoder, cfg.eval_data, teacher, config, cfg.run.seed, cfg.run.progress)
    gap = stream["vae_encoder_psnr_vs_frames_db"] - stream["tiny_encoder_psnr_vs_frames_db"]
    report = {"teacher_checkpoint": str(teacher), "held_out": {"latents": latents, "end_to_end": stream},
              "psnr_tolerance_db": cfg.psnr_tolerance_db, "meets_bar": gap <= cfg.psnr_tolerance_db,
              "parameters": sum(p.numel() for p in encoder.parameters()),
              "config": {"data": to_dict(cfg.eval_data), "encoder": dict(encoder.config), "steps": cfg.run.steps}}
    (final / "evaluation.json").write_text(json.dumps(report, indent=2))
    print(f"held out latents ({latents['clips']} clips): MSE {latents['mse']:.5f}, "
          f"relative RMS error {100 * latents['relative_rms']:.2f} %")
    print(f"held out end to end ({stream['clips']} clips, {stream['decoder']} decoder), PSNR vs recorded frames: "
          f"VAE encoder {stream['vae_encoder_psnr_vs_frames_db']:.2f} dB, tiny encoder "
          f"{stream['tiny_encoder_psnr_vs_frames_db']:.2f} dB; tiny vs VAE stream {stream['tiny_vs_vae_stream_psnr_db']:.2f} dB")
    print(f"bar: within {cfg.psnr_tolerance_db:g} dB of the VAE encoder's PSNR: {'met' if report['meets_bar'] else 'NOT met'}")
    return final


def main(argv: list[str] | None = None) -> None:
    run_from_command_line(TinyEncoderConfig, distill_tiny_encoder, "tiny control encoder", __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
