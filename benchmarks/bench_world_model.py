#!/usr/bin/env python3
"""World-model latency benchmark (issues 5, 12): prints one table per question, side by side in one run.

Random weights (the speed of a config does not depend on its values); the kernel comparison's
output difference and the decoder comparison's PSNR use the packaged checkpoint when there is one.
Variants compared under load run interleaved (round-robin, medians), so a load change mid-run
hits all of them alike. Usage:
    .venv/bin/python benchmarks/bench_world_model.py [--config embedded_cpu] [--threads N] [--quick] [--compile]
"""

import argparse
import contextlib
import dataclasses
import os
import platform
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch
from diffusers.utils import logging as diffusers_logging

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src" / p) for p in ("rynn_common", "rynn_world_node")]

from rynn_world.checkpoints import packaged_checkpoint
from rynn_world.evaluation.metrics import psnr
from rynn_world.model.configs import get_config
from rynn_world.model.teacher import generate_bidirectional
from rynn_world.model.tiny_decoder import TINY_DECODER_DIR, TinyVideoDecoder
from rynn_world.model.tiny_encoder import TINY_ENCODER_DIR, TinyControlEncoder
from rynn_world.model.vae import StreamingVAEDecoder
from rynn_world.nodes.model_loading import load_streaming_model
from rynn_world.skeleton import CameraIntrinsics, SkeletonRenderer
from rynn_world.streaming import STAGES, StreamingWorldModel


def synthetic_hands(num_frames: int, seed: int = 0) -> np.ndarray:
    """Two hands drifting in front of the camera: (T, 2, 21, 3) metres, optical frame."""
    rng = np.random.default_rng(seed)
    shape = rng.normal(0.0, 0.03, (2, 21, 3))
    t = np.arange(num_frames)[:, None, None, None] / 16.0
    hands = np.broadcast_to(shape, (num_frames, 2, 21, 3)).copy()
    hands[:, 0, :, 0] += -0.12 + 0.03 * np.sin(t[..., 0, 0, 0])[:, None]
    hands[:, 1, :, 0] += 0.12
    hands[..., 2] += 0.45 + 0.15 * np.sin(2 * t[..., 0])
    return hands


def intrinsics_for(height: int, width: int) -> CameraIntrinsics:
    return CameraIntrinsics(fx=0.9 * width, fy=0.9 * width, cx=width / 2, cy=height / 2, width=width, height=height)


def stream_stage_ms(config, warmup: int, steps: int, vae_kernels: str = "reference",
                    prepare=lambda model: None, context=torch.no_grad,
                    tiny_decoder: TinyVideoDecoder | None = None,
                    control_encoder: TinyControlEncoder | None = None) -> tuple[dict, StreamingWorldModel]:
    model = StreamingWorldModel(config, intrinsics=intrinsics_for(config.height, config.width), seed=0,
                                vae_kernels=vae_kernels, tiny_decoder=tiny_decoder, control_encoder=control_encoder)
    prepare(model)
    return run_stream(model, warmup, steps, context), model


def run_stream(model: StreamingWorldModel, warmup: int, steps: int, context=torch.no_grad) -> dict:
    config = model.config
    model.reset(np.full((config.height, config.width, 3), 100, dtype=np.uint8))
    hands = synthetic_hands(model.frames_per_step * (warmup + steps))
    n = model.frames_per_step
    with context():
        for i in range(warmup + steps):
            if i == warmup:
                model.timings = type(model.timings)()
            for j in range(n):
                model.push_skeleton(hands[i * n + j], stamp=(i * n + j) / config.fps)
            model.step()
    return model.timings.per_frame_ms()


def vae_weights_channels_last(model: StreamingWorldModel) -> None:
    for module in model.vae.modules():
        if isinstance(module, torch.nn.Conv3d):
            module.weight.data = module.weight.data.contiguous(memory_format=torch.channels_last_3d)


def serving_options(config, threads: int, steps: int, tiny_decoder: TinyVideoDecoder,
                    tiny_encoder: TinyControlEncoder) -> None:
    """Before (diffusers' VAE kernels, torch's default threads) vs each option, same run."""
    variants = [
        ("before: reference kernels", "reference", threads, {}),
        ("reference, 1 thread", "reference", 1, {}),
        ("reference, channels_last_3d", "reference", 1, dict(prepare=vae_weights_channels_last)),
        ("reference, inference_mode", "reference", 1, dict(context=torch.inference_mode)),
        (f"onednn, {threads} threads", "onednn", threads, {}),
        ("onednn, 1 thread (the node's setting)", "onednn", 1, {}),
        ("onednn + tiny decoder", "onednn", 1, {"tiny_decoder": tiny_decoder}),
        ("onednn + tiny decoder + tiny encoder", "onednn", 1, {"tiny_decoder": tiny_decoder, "control_encoder": tiny_encoder}),
    ]
    print(f"{'variant':<38}{'threads':>8}{'render':>8}{'encode':>8}{'DiT':>8}{'decode':>8}{'total':>8}{'FPS':>7}")
    encode = {}
    for name, kernels, n_threads, options in variants:
        torch.set_num_threads(n_threads)
        ms = stream_stage_ms(config, warmup=2, steps=steps, vae_kernels=kernels, **options)[0]
        encode[name] = ms["encode"]
        print(f"{name:<38}{n_threads:>8}{ms['render']:>8.2f}{ms['encode']:>8.2f}{ms['dit']:>8.2f}{ms['decode']:>8.2f}"
              f"{ms['total']:>8.2f}{1000.0 / ms['total']:>7.1f}")
    torch.set_num_threads(threads)
    print("(ms per output video frame; the other processes of the graph share these cores)")
    vae_ms, tiny_ms = encode["onednn + tiny decoder"], encode["onednn + tiny decoder + tiny encoder"]
    print(f"control encode per frame, 1 thread: VAE encoder (onednn) {vae_ms:.2f} ms, tiny encoder {tiny_ms:.2f} ms "
          f"({tiny_ms / vae_ms:.2f}x)")


def kernel_output_difference(config, steps: int) -> None:
    """The same stream through both VAE kernel sets: largest uint8 difference of the frames."""
    streams = []
    for kernels in ("reference", "onednn"):
        model, described = load_streaming_model(config, "", "cpu", seed=0, vae_kernels=kernels)
        model.reset(np.full((config.height, config.width, 3), 100, dtype=np.uint8))
        hands = synthetic_hands(model.frames_per_step * steps)
        frames = []
        for i, hand in enumerate(hands):
            model.push_skeleton(hand, stamp=i / config.fps)
            if (i + 1) % model.frames_per_step == 0:
                frames.append(model.step())
        streams.append(np.concatenate(frames).astype(np.int16))
    diff = np.abs(streams[0] - streams[1])
    weights = "packaged checkpoint" if packaged_checkpoint(config.name) else "random weights"
    print(f"onednn vs reference VAE kernels, {len(diff)} frames ({weights}): max |diff| {diff.max()} "
          f"(uint8), {100.0 * np.mean(diff > 0):.3f} % of values differ")


def camera_size_conversion(config, frames: int = 200) -> None:
    """Model frame -> 640x480 camera frame, per frame."""
    image = np.random.default_rng(0).integers(0, 255, (config.height, config.width, 3), dtype=np.uint8)
    for name, interpolation in (("INTER_LINEAR", cv2.INTER_LINEAR), ("INTER_NEAREST", cv2.INTER_NEAREST)):
        start = time.perf_counter()
        for _ in range(frames):
            np.ascontiguousarray(cv2.resize(image, (640, 480), interpolation=interpolation)).tobytes()
        print(f"cv2.resize {name} {config.width}x{config.height} -> 640x480 + bytes: "
              f"{1000 * (time.perf_counter() - start) / frames:.2f} ms/frame")


def tiny_part_for(part, directory: str, config, path: Path | None, **architecture):
    """(`part` model, where its weights came from): `path` (a trained directory), else the packaged checkpoint's
    `directory`, else random weights of the default architecture (its speed is the same)."""
    if path is not None:
        return part.from_pretrained(str(path)).eval(), str(path)
    packaged = packaged_checkpoint(config.name)
    if packaged is not None and (packaged / directory).is_dir():
        return part.from_pretrained(str(packaged / directory)).eval(), "packaged"
    return part(**architecture).eval(), "random weights"


def tiny_decoder_for(config, path: Path | None = None) -> tuple[TinyVideoDecoder, str]:
    return tiny_part_for(TinyVideoDecoder, TINY_DECODER_DIR, config, path, latent_channels=config.latent_channels,
                         temporal_upsample=config.temporal_compression, spatial_upsample=config.spatial_compression)


def tiny_encoder_for(config, path: Path | None = None) -> tuple[TinyControlEncoder, str]:
    return tiny_part_for(TinyControlEncoder, TINY_ENCODER_DIR, config, path, latent_channels=config.latent_channels,
                         temporal_downsample=config.temporal_compression, spatial_downsample=config.spatial_compression)


def decoder_comparison(config, steps: int, tiny_path: Path | None) -> None:
    """The same stream (same weights, seed and skeletons, so the same latents) through the VAE decoder
    (the node's onednn kernels) and the distilled tiny decoder, stepped in turns on 1 thread (as the
    node runs): decode ms and PSNR."""
    vae_model, _ = load_streaming_model(config, "", "cpu", seed=0, vae_kernels="onednn", decoder="vae")
    tiny, weights = tiny_decoder_for(config, tiny_path)
    tiny_model = StreamingWorldModel(config, transformer=vae_model.transformer, vae=vae_model.vae,
                                     intrinsics=intrinsics_for(config.height, config.width), seed=0,
                                     vae_kernels="onednn", tiny_decoder=tiny)
    models = {"VAE decoder (onednn)": vae_model, "tiny decoder": tiny_model}
    n = vae_model.frames_per_step
    hands = synthetic_hands(n * steps)
    frames = {name: [] for name in models}
    decode_ms = {name: [] for name in models}
    for model in models.values():
        model.reset(np.full((config.height, config.width, 3), 100, dtype=np.uint8))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the node's torch_threads
    for i in range(steps):
        for name, model in models.items():
            for j in range(n):
                model.push_skeleton(hands[i * n + j], stamp=(i * n + j) / config.fps)
            frames[name].append(model.step())
            decode_ms[name].append(1000.0 * model.timings.last["decode"])
    torch.set_num_threads(threads)
    print(f"{'decoder':<24}{'decode ms/step (4 frames), median':>36}{'ms/frame':>10}")
    for name, values in decode_ms.items():
        median = float(np.median(values[1:]))
        print(f"{name:<24}{median:>36.1f}{median / n:>10.2f}")
    ratio = np.median(decode_ms["tiny decoder"][1:]) / np.median(decode_ms["VAE decoder (onednn)"][1:])
    quality = psnr(np.concatenate(frames["tiny decoder"]), np.concatenate(frames["VAE decoder (onednn)"]))
    print(f"tiny / VAE decode time: {ratio:.2f}; PSNR of the tiny decode against the VAE's on this stream "
          f"({steps * n} frames, {weights} tiny decoder, synthetic hands; held-out figures: model card): {quality:.2f} dB")


def dit_options(config, threads: int, rounds: int, with_compile: bool) -> None:
    """The DiT's step (4 denoising passes + commit) under each CPU option, variants in turns."""
    import copy

    from torch.nn.attention import SDPBackend, sdpa_kernel

    from rynn_world import flow_matching as fm
    from rynn_world.model.causal import CausalStudentSampler

    base, _ = load_streaming_model(config, "", "cpu", seed=0)
    h, w = config.latent_size
    g = torch.Generator().manual_seed(0)
    ref, control = (torch.randn(1, config.latent_channels, 1, h, w, generator=g) for _ in range(2))

    def sampler_for(dtype=torch.float32, compiled=False):
        transformer = copy.deepcopy(base.transformer).to(dtype)
        if compiled:
            transformer.forward_cached = torch.compile(transformer.forward_cached, dynamic=False)
        sampler = CausalStudentSampler(transformer, config.latent_size, block_frames=config.block_frames,
                                       window_blocks=config.window_blocks,
                                       sigmas=fm.student_sigmas(config.denoising_list, config.shift),
                                       generator=torch.Generator().manual_seed(0))
        start = time.perf_counter()
        with torch.no_grad():
            sampler.start(ref.to(dtype), control.to(dtype))
            for _ in range(config.window_blocks + 1):  # steady state: the window is full
                sampler.next_block(control.to(dtype))
        return sampler, time.perf_counter() - start

    def call(sampler, dtype=torch.float32, n_threads=1, context=contextlib.nullcontext):
        def run():
            torch.set_num_threads(n_threads)
            with torch.no_grad(), context():
                sampler.next_block(control.to(dtype))
        return run

    fp32, _ = sampler_for()
    bf16, _ = sampler_for(torch.bfloat16)
    variants = {
        "fp32, 1 thread, SDPA default (node)": call(fp32),
        f"fp32, {threads} threads": call(fp32, n_threads=threads),
        "fp32, 1 thread, SDPA math kernel": call(fp32, context=lambda: sdpa_kernel([SDPBackend.MATH])),
        "bf16 weights + KV cache, 1 thread": call(bf16, torch.bfloat16),
    }
    first_block = {}
    if with_compile:
        compiled, first_block["fp32, 1 thread, torch.compile"] = sampler_for(compiled=True)
        variants["fp32, 1 thread, torch.compile"] = call(compiled)
    ms = interleaved_ms(variants, rounds)
    baseline = ms["fp32, 1 thread, SDPA default (node)"]
    print(f"{'DiT variant':<38}{'ms/step':>9}{'vs node':>9}")
    for name, value in ms.items():
        extra = f"  (start + first {config.window_blocks + 1} blocks: {first_block[name]:.0f} s, compiling)" if name in first_block else ""
        print(f"{name:<38}{value:>9.1f}{value / baseline:>9.2f}{extra}")
    torch.set_num_threads(threads)
    with torch.no_grad():
        a, b = fp32.next_block(control), bf16.next_block(control.to(torch.bfloat16)).float()
    print(f"bf16 vs fp32 latent of the same step: relative RMS difference {float((a - b).norm() / a.norm()):.4f}"
          f"{'' if with_compile else '; torch.compile: --compile (minutes of compiling on a loaded 2-core machine)'}")


def interleaved_ms(variants: dict, rounds: int, calls: int = 2) -> dict:
    """Median ms per call of each variant, the variants taking turns every round (load hits all alike)."""
    samples = {name: [] for name in variants}
    for call in variants.values():
        call()  # warm-up
    for _ in range(rounds):
        for name, call in variants.items():
            start = time.perf_counter()
            for _ in range(calls):
                call()
            samples[name].append(1000.0 * (time.perf_counter() - start) / calls)
    return {name: float(np.median(values)) for name, values in samples.items()}


def print_stage_table(rows):
    print(f"{'config':<14}{'resolution':>11}{'render+enc':>12}{'DiT':>9}{'decode':>9}{'total':>9}{'FPS':>8}")
    for name, (h, w), ms in rows:
        print(f"{name:<14}{f'{h}x{w}':>11}{ms['render'] + ms['encode']:>12.2f}{ms['dit']:>9.2f}"
              f"{ms['decode']:>9.2f}{ms['total']:>9.2f}{1000.0 / ms['total']:>8.1f}")
    print("(ms per output video frame; one step = 4 video frames = 1 latent frame)")


def causal_vs_bidirectional(model: StreamingWorldModel, latent_frames: int, teacher_steps: int) -> None:
    """DiT + VAE decode throughput for one clip: causal 4-step stream vs bidirectional N-step."""
    cfg, sampler, transformer = model.config, model.sampler, model.transformer
    h, w = cfg.latent_size
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(1, cfg.latent_channels, 1, h, w, generator=g)
    control = torch.randn(1, cfg.latent_channels, latent_frames, h, w, generator=g)
    video_frames = 1 + 4 * (latent_frames - 1)
    with torch.no_grad():
        start = time.perf_counter()
        sampler.start(ref, control[:, :, :1])
        blocks = [ref] + [sampler.next_block(control[:, :, i : i + 1]) for i in range(1, latent_frames)]
        StreamingVAEDecoder(model.vae).push(torch.cat(blocks, dim=2))
        causal_s = time.perf_counter() - start
        start = time.perf_counter()
        latents = generate_bidirectional(transformer, ref, control, latent_frames, num_steps=teacher_steps,
                                         shift=cfg.shift, sampler="unipc", generator=g)
        StreamingVAEDecoder(model.vae).push(latents)
        teacher_s = time.perf_counter() - start
    causal_fps, teacher_fps = video_frames / causal_s, video_frames / teacher_s
    print(f"clip: {video_frames} video frames ({latent_frames} latent) at {cfg.height}x{cfg.width}, DiT + VAE decode")
    print(f"{'mode':<34}{'seconds':>9}{'FPS':>8}")
    print(f"{'causal student, 4 steps + commit':<34}{causal_s:>9.2f}{causal_fps:>8.1f}")
    print(f"{f'bidirectional teacher, {teacher_steps} UniPC steps':<34}{teacher_s:>9.2f}{teacher_fps:>8.1f}")
    print(f"throughput ratio causal / bidirectional: {causal_fps / teacher_fps:.1f}x  (paper, H100: 40 / 2.8 = 14x)")


def cost_vs_position(model: StreamingWorldModel, far: int, probe: int = 10) -> None:
    """DiT ms per latent block at stream position 10 and `far`, and the KV-cache size."""
    cfg, sampler = model.config, model.sampler
    h, w = cfg.latent_size
    g = torch.Generator().manual_seed(1)
    ref = torch.randn(1, cfg.latent_channels, 1, h, w, generator=g)
    control = torch.randn(1, cfg.latent_channels, 1, h, w, generator=g)
    pointer = sampler.cache.storage.data_ptr()
    timings = {}
    with torch.no_grad():
        sampler.start(ref, control)
        for position in range(1, far + probe):
            start = time.perf_counter()
            sampler.next_block(control)
            elapsed = time.perf_counter() - start
            for mark in (10, far):
                if mark <= position < mark + probe:
                    timings.setdefault(mark, []).append(elapsed)
    print(f"{'stream position (latent block)':<32}{'DiT ms/block (median)':>22}")
    for mark, values in timings.items():
        print(f"{mark:<32}{1000 * float(np.median(values)):>22.2f}")
    ratio = np.median(timings[far]) / np.median(timings[10])
    same = sampler.cache.storage.data_ptr() == pointer
    print(f"cost ratio {far} / 10: {ratio:.2f}; KV cache {sampler.cache.nbytes / 1024:.0f} KiB, "
          f"pre-allocated once (same storage after {far + probe} blocks: {same}); window {cfg.window_blocks} blocks + sink")


def renderer_fps(frames: int = 400) -> None:
    renderer = SkeletonRenderer(intrinsics_for(480, 832))
    hands = synthetic_hands(frames)
    forearms = np.stack([hands[:, :, 0] + np.array([0.0, 0.25, 0.1]), hands[:, :, 0]], axis=2)
    buffer = np.zeros((1, 480, 832, 3), dtype=np.uint8)
    renderer.render(hands[:1], forearms[:1], out=buffer)
    start = time.perf_counter()
    for t in range(frames):
        renderer.render(hands[t : t + 1], forearms[t : t + 1], out=buffer)
    streaming = frames / (time.perf_counter() - start)
    start = time.perf_counter()
    renderer.render(hands[:64], forearms[:64])
    batch = 64 / (time.perf_counter() - start)
    print(f"renderer 480x832, two hands + forearms: {streaming:.0f} FPS frame-by-frame (reused buffer), "
          f"{batch:.0f} FPS as a 64-frame batch (fresh array)  (target >= 500)")


SECTIONS = ("serving", "decoder", "dit", "stream")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="embedded_cpu")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--quick", action="store_true", help="fewer steps, position 200 instead of 1000")
    parser.add_argument("--compile", action="store_true", help="also time the DiT under torch.compile (slow to compile)")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument("--tiny-decoder", type=Path, help="a tiny_decoder/ directory to compare (default: the packaged one)")
    parser.add_argument("--tiny-encoder", type=Path,
                        help="a tiny_control_encoder/ directory to compare (default: the packaged one)")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    if not sections <= set(SECTIONS):
        parser.error(f"unknown sections {sorted(sections - set(SECTIONS))}; known: {SECTIONS}")
    torch.set_num_threads(args.threads)
    diffusers_logging.set_verbosity_error()  # random-weight models trigger dtype-cast notices
    torch.manual_seed(0)
    config = get_config(args.config)

    print("== machine ==")
    print(f"python {platform.python_version()}, torch {torch.__version__}, cpus {os.cpu_count()}, "
          f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.2f}, "
          f"device cpu, dtype float32, config {config.name}")

    steps = 4 if args.quick else 10
    if "serving" in sections:
        print("\n== serving options, before vs after (per output frame) ==")
        serving_options(config, args.threads, steps, tiny_decoder_for(config, args.tiny_decoder)[0],
                        tiny_encoder_for(config, args.tiny_encoder)[0])
        kernel_output_difference(config, steps)
        camera_size_conversion(config)

    if "decoder" in sections:
        print("\n== VAE decoder vs distilled tiny decoder, same stream, in turns ==")
        decoder_comparison(config, steps=3 * steps, tiny_path=args.tiny_decoder)

    if "dit" in sections:
        print("\n== DiT step options on the CPU, in turns (median) ==")
        dit_options(config, args.threads, rounds=steps, with_compile=args.compile)

    if "stream" not in sections:
        return
    tiny, weights = tiny_decoder_for(config, args.tiny_decoder)
    print("\n== per output frame: causal streaming (4-step student, onednn VAE kernels, tiny decoder "
          f"({weights}), {args.threads} threads) ==")
    rows = []
    native, model = stream_stage_ms(config, warmup=2, steps=steps, vae_kernels="onednn", tiny_decoder=tiny)
    rows.append((config.name, (config.height, config.width), native))
    for h, w in ((96, 160), (64, 112)):
        proxy = dataclasses.replace(config, name=f"{config.name}@proxy", height=h, width=w)
        rows.append(("reduced proxy", (h, w), stream_stage_ms(proxy, warmup=2, steps=steps, vae_kernels="onednn", tiny_decoder=tiny)[0]))
    print_stage_table(rows)
    assert set(STAGES) <= set(native)

    print("\n== causal 4-step vs bidirectional N-step, same clip and config ==")
    causal_vs_bidirectional(model, latent_frames=5 if args.quick else 9, teacher_steps=20 if args.quick else 50)

    print("\n== per-frame cost vs stream length ==")
    cost_vs_position(model, far=200 if args.quick else 1000)

    print("\n== skeleton renderer ==")
    renderer_fps()


if __name__ == "__main__":
    main()
