"""Distil a tiny streaming decoder from a checkpoint's VAE decoder, and measure it on held-out clips.

The teacher is the full VAE decoder, run exactly as serving runs it (StreamingVAEDecoder, one latent
frame at a time from a stream start). Each clip gives two latent sequences: the VAE encoder's
latents of the recorded frames, and the latents StreamingWorldModel itself generates for the clip's
control frames from its first frame (what the live stream decodes). The target of both is the VAE's decode; the
tiny decoder learns it with L1 + MSE over whole clips (random crops, less a margin near the crop's
edges where the VAE's decode saw latents the crop cut off). Held-out clips are scored the same way
(PSNR against the VAE's decode, and both decoders' PSNR against the recorded frames). A teacher with
no transformer yet (a retrained VAE alone) works with generated_fraction=0: encoder latents only.

    python -m rynn_world.training.distill_tiny_decoder --config src/rynn_world_node/config/tiny_decoder_cpu.yaml
"""

import hashlib
import json
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from rynn_common.config_io import to_dict

from ..checkpoints import packaged_checkpoint
from ..evaluation.generation import stream_model
from ..evaluation.metrics import psnr
from ..model.configs import WorldModelConfig, get_config
from ..model.tiny_decoder import TINY_DECODER_DIR, StreamingTinyDecoder, TinyVideoDecoder
from ..model.vae import StreamingVAEDecoder, StreamingVAEEncoder, rgb_to_tensor, tensor_to_rgb, use_vae_kernels
from ..streaming import StreamingWorldModel
from .config import TinyDecoderConfig, run_from_command_line
from .datasets import build_clip_dataset
from .export import load_or_build_transformer, load_vae
from .loop import TrainingLoop, adamw, lr_schedule, make_accelerator, step_generator

SOURCES = ("encoded", "generated")


def teacher_directory(cfg: TinyDecoderConfig) -> Path:
    """The checkpoint whose vae/ is the teacher; its transformer/ generates the `generated` half, so it
    may be missing only when generated_fraction is 0 (a freshly trained VAE before its DiT exists)."""
    path = Path(cfg.teacher_checkpoint) if cfg.teacher_checkpoint else packaged_checkpoint(cfg.model)
    if path is None or not (path / "vae").is_dir():
        raise FileNotFoundError(f"teacher checkpoint {path} has no vae/ (teacher_checkpoint in the config)")
    if cfg.generated_fraction > 0 and not (path / "transformer").is_dir():
        raise FileNotFoundError(f"teacher checkpoint {path} has no transformer/ to generate latents with: "
                                "give one trained against this VAE, or set generated_fraction=0")
    return path


class _RecordingDecoder:
    """Stands in for a StreamingWorldModel's VAE decoder: decodes as it would and keeps every latent
    block it was given and the frames it made of them."""

    def __init__(self, decoder):
        self.decoder = decoder
        self.latents, self.frames = [], []

    def reset(self) -> None:
        self.decoder.reset()
        self.latents, self.frames = [], []

    def push(self, latents: torch.Tensor) -> torch.Tensor:
        frames = self.decoder.push(latents)
        self.latents.append(latents)
        self.frames.append(frames)
        return frames

    def prime(self, latents: torch.Tensor) -> None:
        self.push(latents)  # the reference's decode is part of the clip's target


@torch.no_grad()
def clip_pairs(clip, vae, transformer, config: WorldModelConfig, seed: int) -> dict[str, dict]:
    """Per source: the (z, F, h, w) latent sequence and the VAE's decode of it, (T, H, W, 3) uint8.

    `generated` (only given a transformer) runs the live path itself (StreamingWorldModel reset on the
    clip's first frame, its control frames pushed one per tick, a step per block), recording what its
    decoder is given."""
    latents = StreamingVAEEncoder(vae).push(rgb_to_tensor(clip.frames))
    pairs = {"encoded": {"latents": latents[0].float(), "target": tensor_to_rgb(StreamingVAEDecoder(vae).push(latents)),
                         "frames": clip.frames}}
    if transformer is None:
        return pairs
    model = StreamingWorldModel(config, transformer=transformer, vae=vae, seed=seed)
    recorder = model.decoder = _RecordingDecoder(model.decoder)
    stream_model(model, clip.frames[0], clip.skeleton)
    pairs["generated"] = {"latents": torch.cat(recorder.latents, dim=2)[0].float(),
                          "target": tensor_to_rgb(torch.cat(recorder.frames, dim=2)), "frames": clip.frames}
    return pairs


def teacher_fingerprint(teacher: Path, data, with_transformer: bool) -> str:
    """What a pairs cache was computed from: the teacher's weight files and the clips' settings."""
    digest = hashlib.sha256(json.dumps(vars(data), sort_keys=True, default=str).encode())
    for part in ("vae", "transformer") if with_transformer else ("vae",):
        for weights in sorted((teacher / part).glob("*.safetensors")):
            digest.update(weights.read_bytes())
    return digest.hexdigest()


def build_pairs(data, cfg: TinyDecoderConfig, teacher: Path, cache: Path, desc: str) -> list[dict]:
    """Every clip's pairs, cached in `cache` (torch.save) for resumed runs; a cache computed from other
    teacher weights or clips is recomputed (a retrained VAE must never be scored on the old one's decodes)."""
    with_transformer = cfg.generated_fraction > 0
    fingerprint = teacher_fingerprint(teacher, data, with_transformer)
    if cache.is_file():
        cached = torch.load(cache, weights_only=False)
        if isinstance(cached, dict) and cached.get("fingerprint") == fingerprint:  # (older caches: a bare list)
            return cached["pairs"]
    config = get_config(cfg.model)
    vae = use_vae_kernels(load_vae(config, str(teacher)), "onednn")
    transformer = load_or_build_transformer(config, str(teacher)).eval() if with_transformer else None
    clips = build_clip_dataset(data, config)
    pairs = [clip_pairs(clips[i], vae, transformer, config, cfg.run.seed + i)
             for i in tqdm(range(len(clips)), desc=desc, dynamic_ncols=True, disable=not cfg.run.progress)]
    cache.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"fingerprint": fingerprint, "pairs": pairs}, cache)
    return pairs


def to_signed(frames: np.ndarray) -> torch.Tensor:
    """(T, H, W, 3) uint8 -> (3, T, H, W) in [-1, 1]."""
    return rgb_to_tensor(frames)[0]


def random_crop(latents: torch.Tensor, target: torch.Tensor, crop: tuple[int, int] | None, scale: int,
                generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The same window of the latents and of the frames they decode to (every decoder layer is local)."""
    if crop is None:
        return latents, target
    h, w = latents.shape[-2:]
    top = int(torch.randint(h - crop[0] + 1, (1,), generator=generator))
    left = int(torch.randint(w - crop[1] + 1, (1,), generator=generator))
    return (latents[..., top: top + crop[0], left: left + crop[1]],
            target[..., top * scale: (top + crop[0]) * scale, left * scale: (left + crop[1]) * scale])


def inner(frames: torch.Tensor, margin: int) -> torch.Tensor:
    """The frames less `margin` pixels on each side: near a crop's edge the VAE's decode depended on
    latents outside the crop, which the tiny decoder was not given."""
    return frames[..., margin: frames.shape[-2] - margin, margin: frames.shape[-1] - margin]


@torch.no_grad()
def held_out_scores(decoder: TinyVideoDecoder, pairs: list[dict]) -> dict:
    """Mean PSNR per source: tiny vs the VAE's decode, and each decoder vs the recorded frames."""
    decoder.eval()
    scores = {}
    for source in pairs[0]:
        rows = []
        for pair in pairs:
            item = pair[source]
            tiny = tensor_to_rgb(StreamingTinyDecoder(decoder).push(item["latents"][None]))
            rows.append((psnr(tiny, item["target"]), psnr(tiny, item["frames"]), psnr(item["target"], item["frames"])))
        tiny_vs_vae, tiny_vs_frames, vae_vs_frames = np.mean(rows, axis=0)
        scores[source] = {"clips": len(rows), "psnr_vs_vae_db": float(tiny_vs_vae),
                          "tiny_psnr_vs_frames_db": float(tiny_vs_frames), "vae_psnr_vs_frames_db": float(vae_vs_frames)}
    return scores


def initial_decoder(cfg: TinyDecoderConfig, config: WorldModelConfig) -> TinyVideoDecoder:
    """Fresh weights of ``cfg.decoder``'s architecture, or ``cfg.init_checkpoint``'s tiny decoder (which must
    have that architecture: the recipe names what it trains)."""
    decoder = TinyVideoDecoder(latent_channels=config.latent_channels, temporal_upsample=config.temporal_compression,
                               spatial_upsample=config.spatial_compression, **cfg.decoder)
    if cfg.init_checkpoint:
        path = Path(cfg.init_checkpoint)
        path = path / TINY_DECODER_DIR if (path / TINY_DECODER_DIR).is_dir() else path
        try:
            decoder.load_state_dict(TinyVideoDecoder.from_pretrained(str(path)).state_dict())
        except RuntimeError as error:
            raise ValueError(f"init_checkpoint {path} is not a tiny decoder of the config's architecture: {error}") from None
    return decoder


def distill_tiny_decoder(cfg: TinyDecoderConfig, resume: str | None = "latest") -> Path:
    if cfg.loss_margin and (cfg.latent_crop is None or 2 * cfg.loss_margin >= min(cfg.latent_crop)):
        raise ValueError(f"loss_margin {cfg.loss_margin} needs a latent_crop more than twice as large, got {cfg.latent_crop}")
    accelerator = make_accelerator(cfg.run)
    output = Path(cfg.run.output_dir)
    teacher = teacher_directory(cfg)
    train_pairs = build_pairs(cfg.data, cfg, teacher, output / "pairs_train.pt", "teacher decodes (train)")
    eval_pairs = build_pairs(cfg.eval_data, cfg, teacher, output / "pairs_held_out.pt", "teacher decodes (held out)")
    config = get_config(cfg.model)
    torch.manual_seed(cfg.run.seed)
    decoder = initial_decoder(cfg, config)
    decoder = decoder.to(memory_format=torch.channels_last).train()  # oneDNN's fast layout on the CPU
    optimizer = adamw(decoder.parameters(), cfg.optim)
    scheduler = lr_schedule(optimizer, cfg.optim, cfg.run.steps)
    loop = TrainingLoop(cfg.run, accelerator, {"tiny_decoder": decoder}, {"tiny_decoder": optimizer},
                        {"tiny_decoder": scheduler}, name="tiny decoder")
    if resume:
        loop.resume(resume)

    def step_fn(step: int) -> dict[str, float]:
        generator = step_generator(cfg.run.seed, step, accelerator.process_index, "cpu")
        picks = torch.randint(len(train_pairs), (cfg.run.batch_size,), generator=generator).tolist()
        sources = [SOURCES[int(float(torch.rand(1, generator=generator)) < cfg.generated_fraction)] for _ in picks]
        latents = torch.stack([train_pairs[i][s]["latents"] for i, s in zip(picks, sources)])
        target = torch.stack([to_signed(train_pairs[i][s]["target"]) for i, s in zip(picks, sources)])
        latents, target = random_crop(latents, target, cfg.latent_crop, config.spatial_compression, generator)
        decoded, _ = decoder(latents)
        margin = cfg.loss_margin * config.spatial_compression
        decoded, target = inner(decoded, margin), inner(target, margin)
        l1 = (decoded - target).abs().mean()
        mse = (decoded - target).square().mean()
        loss = cfg.l1_weight * l1 + cfg.mse_weight * mse
        loss.backward()
        torch.nn.utils.clip_grad_norm_(decoder.parameters(), cfg.optim.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        return {"tiny_decoder/loss": loss.item(), "tiny_decoder/psnr_db": float(10 * torch.log10(4.0 / mse.detach()))}

    loop.run(cfg.run.steps, step_fn)
    final = output / "final"
    decoder.eval().save_pretrained(str(final / TINY_DECODER_DIR), safe_serialization=True)
    scores = held_out_scores(decoder, eval_pairs)
    worst = min(s["psnr_vs_vae_db"] for s in scores.values())
    report = {"teacher_checkpoint": str(teacher), "held_out": scores, "psnr_bar_db": cfg.psnr_bar_db,
              "meets_bar": worst >= cfg.psnr_bar_db,
              "parameters": sum(p.numel() for p in decoder.parameters()),
              "config": {"data": to_dict(cfg.eval_data), "decoder": dict(decoder.config), "steps": cfg.run.steps}}
    (final / "evaluation.json").write_text(json.dumps(report, indent=2))
    for source, s in scores.items():
        print(f"held out, {source} latents ({s['clips']} clips): tiny vs VAE decode {s['psnr_vs_vae_db']:.2f} dB; "
              f"vs recorded frames: tiny {s['tiny_psnr_vs_frames_db']:.2f}, VAE {s['vae_psnr_vs_frames_db']:.2f} dB")
    print(f"bar {cfg.psnr_bar_db:g} dB against the VAE's decode: {'met' if report['meets_bar'] else 'NOT met'}")
    return final


def main(argv: list[str] | None = None) -> None:
    run_from_command_line(TinyDecoderConfig, distill_tiny_decoder, "tiny decoder", __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
