#!/usr/bin/env python3
"""The full-size world model streaming on one GPU (issue 32): the paper's 4-step causal student at 480x832.

What runs. Random weights of a config (default: wan2.2-ti2v-5b where CUDA is present; speed does not
depend on the values), built by the node's loader (rynn_world.nodes.model_loading.load_streaming_model:
bf16 on CUDA, float32 on the CPU; --checkpoint DIR loads a user's weights through the same call) and
driven as the live node drives it: skeletons pushed on the model's 16 FPS clock, then
StreamingWorldModel.step() = control render + control encode (VAE encoder) + the 4-step DiT against
the pre-allocated KV cache (reference sink + rolling window) + VAE decode + reference compositing,
with a re-anchor every --reanchor-every frames. Random weights are initialised on the device they run
on (seconds on a GPU; 5 B parameters initialised on a CPU take minutes).

What it prints. Streaming FPS over --frames frames after --warmup steps; ms per output frame of each
stage: render, encode, DiT, decode (the model's own stage timings; on CUDA it synchronises after each
GPU stage, so they are GPU times), re-anchor (the periodic reset, amortised) and other (pushing the
skeletons); peak GPU memory (torch.cuda.max_memory_allocated: weights, KV cache and activations); and
the bidirectional teacher's time for the same clip (VAE-encoded reference and control frames, then
rynn_world.model.teacher.generate_bidirectional, the teacher evaluation runs: every latent frame
denoised together for --teacher-steps steps of Wan's UniPC sampler, then the VAE decode), so the
causal-vs-bidirectional throughput ratio (paper: 40.0 / 2.8 FPS = 14.3x). The teacher is timed without
the skeleton render, which the causal figure includes: the ratio errs low.

Options, each measured on and off side by side with --sweep (one table):
  --attention sdpa|flash|efficient|cudnn|math  the DiT's SDPA backend (torch.nn.attention.sdpa_kernel
                        around the sampler; the VAE keeps the default); sdpa = PyTorch's own choice.
  --compile             regional torch.compile of every DiT block's elementwise-heavy modules (FFN, the
                        float32 LayerNorms, the q/k RMS norms); one compiled graph per module class
                        serves all 30 blocks. Compiling the whole cached step instead recompiles for
                        every state of the cache (window fill, ring slot, commit pass, timestep).
  --channels-last       the VAE's Conv3d weights in channels_last_3d (cuDNN then runs NDHWC kernels).
  --cudnn-benchmark     torch.backends.cudnn.benchmark (cuDNN times its convolution algorithms for the VAE's
                        shapes during warm-up; the node leaves it off).
  --tiny-decoder        decode with a TinyVideoDecoder (model.tiny_decoder): the checkpoint's trained one,
                        else random weights of a 16x variant sized for this model (speed only: no trained
                        full-size tiny decoder exists, so its quality at 480x832 is unmeasured).
CUDA graphs are not offered: the cached step cannot be captured as it is. Each pass reads the cache's
Python state (window fill, ring slot) to build the keys' RoPE positions as CPU tensors indexed into the
GPU tables (a host-to-device copy and a host sync, int(positions.max()), neither allowed in a capture),
the attended prefix grows until the window is full, and each of the 4 + 1 passes takes its timestep as
a Python float. Capturing it needs the positions and timesteps as device tensors in static buffers
(a change to model/transformer.py and model/kv_cache.py), then one graph per pass in the steady state.

Usage:
    .venv/bin/python benchmarks/bench_gpu_streaming.py --config tiny --device cpu --frames 16   # CPU check
    python3 benchmarks/bench_gpu_streaming.py --sweep --frames 200                             # GPU (scripts/gpu_check.sh)
"""

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import resource
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src" / p) for p in ("rynn_common", "rynn_world_node")]

from bench_world_model import synthetic_hands, tiny_part_for  # the CPU benchmark's pieces
from diffusers.utils import logging as diffusers_logging

from rynn_common.description import D435I_COLOR
from rynn_world.checkpoints import packaged_checkpoint
from rynn_world.model.configs import CONFIGS, get_config
from rynn_world.model.teacher import generate_bidirectional
from rynn_world.model.tiny_decoder import TINY_DECODER_DIR, TinyVideoDecoder
from rynn_world.model.vae import StreamingVAEDecoder, StreamingVAEEncoder, rgb_to_tensor, tensor_to_rgb
from rynn_world.nodes.model_loading import load_streaming_model
from rynn_world.streaming import StreamingWorldModel

CPU_CONFIGS = ("tiny", "embedded_cpu")  # every other config is full size and needs CUDA
FULL_SIZE = "wan2.2-ti2v-5b"
PAPER_H100 = {"fps": 40.0, "ms_per_frame": 25.0, "teacher_fps": 2.8}  # paper Sec. 5.2 and Table 4
STAGES = ("render", "encode", "dit", "decode", "reanchor", "other")
BACKENDS = {"flash": [SDPBackend.FLASH_ATTENTION], "efficient": [SDPBackend.EFFICIENT_ATTENTION],
            "cudnn": [SDPBackend.CUDNN_ATTENTION], "math": [SDPBackend.MATH]}
GPU_ONLY_BACKENDS = ("efficient", "cudnn")


@dataclasses.dataclass(frozen=True)
class Options:
    attention: str = "sdpa"
    compile: bool = False
    channels_last: bool = False
    tiny_decoder: bool = False
    cudnn_benchmark: bool = False

    @property
    def label(self) -> str:
        parts = [self.attention, "compiled" if self.compile else "eager"]
        parts += ["VAE channels_last"] if self.channels_last else []
        parts += ["cudnn.benchmark"] if self.cudnn_benchmark else []
        parts += ["tiny decoder"] if self.tiny_decoder else []
        return ", ".join(parts)


SWEEP = {  # the most telling first: a --budget-s cut leaves out the tail
    "baseline": Options(),
    "flash": Options(attention="flash"),
    "channels_last": Options(channels_last=True),
    "cudnn_benchmark": Options(cudnn_benchmark=True),
    "tiny_decoder": Options(tiny_decoder=True),
    "efficient": Options(attention="efficient"),
    "cudnn": Options(attention="cudnn"),
    "math": Options(attention="math"),
    "compile": Options(compile=True),  # compiling variants last: compiling changes the shared DiT in place
    "all": Options(attention="flash", compile=True, channels_last=True, cudnn_benchmark=True),
}


class BenchmarkSetupError(RuntimeError):
    """A setting this machine cannot run; main prints it without a traceback."""


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def resolve_device_and_config(args) -> tuple[torch.device, str]:
    """(device, config name); full size without CUDA is a BenchmarkSetupError."""
    cuda = torch.cuda.is_available()
    device = torch.device(args.device or ("cuda" if cuda else "cpu"))
    name = args.config or (FULL_SIZE if device.type == "cuda" else "tiny")
    if name not in CONFIGS:
        raise BenchmarkSetupError(f"unknown config {name!r}; known: {sorted(CONFIGS)}")
    if device.type == "cuda" and not cuda:
        raise BenchmarkSetupError(f"--device {device} asked for, but torch {torch.__version__} sees no CUDA device "
                                  "(torch.cuda.is_available() is False)")
    if name not in CPU_CONFIGS and device.type != "cuda":
        why = "no CUDA device is visible to torch" if not cuda else f"--device {device} was asked for"
        raise BenchmarkSetupError(
            f"--config {name} is the full-size model ({get_config(name).height}x{get_config(name).width}, "
            f"~5 B parameters in bf16): it needs a CUDA GPU, and {why}. The CPU check of this script: "
            f"--config tiny --device cpu")
    if device.type == "cpu":
        for option in ("attention",):
            if getattr(args, option) in GPU_ONLY_BACKENDS:
                raise BenchmarkSetupError(f"--attention {args.attention} is a CUDA kernel; on the CPU use sdpa, flash or math")
    return device, name


def build_base(config, device: torch.device, checkpoint: str, seed: int) -> tuple[StreamingWorldModel, str, float]:
    """The node's model (load_streaming_model); random weights are initialised on `device` itself."""
    random_weights = not checkpoint and packaged_checkpoint(config.name) is None
    start = time.perf_counter()
    with torch.device(device) if random_weights else contextlib.nullcontext():
        model, described = load_streaming_model(config, checkpoint, str(device), seed=seed, vae_kernels="auto",
                                                 decoder="vae", encoder="vae")
    sync(device)
    return model, described, time.perf_counter() - start


def tiny_decoder_for(config, checkpoint: str) -> tuple[TinyVideoDecoder, str]:
    """The checkpoint's (or packaged) tiny decoder, else random weights sized for the config's upsampling."""
    stages = config.spatial_compression.bit_length() - 2  # 2x upsampling stages before the 2x pixel shuffle
    widths = tuple(16 * 2 ** i for i in reversed(range(stages)))  # 8x: (32, 16) as the default; 16x: (64, 32, 16)
    path = Path(checkpoint) / TINY_DECODER_DIR if checkpoint and (Path(checkpoint) / TINY_DECODER_DIR).is_dir() else None
    return tiny_part_for(TinyVideoDecoder, TINY_DECODER_DIR, config, path, latent_channels=config.latent_channels,
                         temporal_upsample=config.temporal_compression,
                         spatial_upsample=config.spatial_compression, frame_widths=widths)


def set_vae_memory_format(model: StreamingWorldModel, memory_format: torch.memory_format) -> None:
    for module in model.vae.modules():
        if isinstance(module, torch.nn.Conv3d):
            module.weight.data = module.weight.data.contiguous(memory_format=memory_format)


def compile_blocks(transformer) -> None:
    """Regional torch.compile of each block's modules the cached step calls (see the module doc), once."""
    if getattr(transformer, "_bench_compiled", False):
        return
    for block in transformer.blocks:
        for module in (block.ffn, block.norm1, block.norm2, block.norm3, block.attn1.norm_q, block.attn1.norm_k,
                       block.attn2.norm_q):
            module.compile()
    transformer._bench_compiled = True


def use_attention_backend(model: StreamingWorldModel, attention: str) -> None:
    """Run the DiT's passes (the sampler's start and next_block) under one SDPA backend."""
    if attention == "sdpa":
        return
    sampler = model.sampler
    for name in ("start", "next_block"):
        method = getattr(sampler, name)

        def under_backend(*args, _method=method, **kwargs):
            with sdpa_kernel(BACKENDS[attention]):
                return _method(*args, **kwargs)

        setattr(sampler, name, under_backend)


def variant_model(base: StreamingWorldModel, options: Options, tiny: TinyVideoDecoder | None,
                  reanchor_every: int | None) -> StreamingWorldModel:
    """A StreamingWorldModel on the base model's weights with `options` applied."""
    if options.compile:
        compile_blocks(base.transformer)
    set_vae_memory_format(base, torch.channels_last_3d if options.channels_last else torch.contiguous_format)
    torch.backends.cudnn.benchmark = options.cudnn_benchmark
    model = StreamingWorldModel(
        base.config, transformer=base.transformer, vae=base.vae, intrinsics=D435I_COLOR, device=base.device,
        dtype=base.dtype, seed=0, reanchor_every=reanchor_every,
        vae_kernels="onednn" if base.device.type == "cpu" else "reference",  # load_streaming_model's "auto"
        tiny_decoder=tiny if options.tiny_decoder else None,
    )
    use_attention_backend(model, options.attention)
    return model


def reference_image(config) -> np.ndarray:
    y, x = np.mgrid[0 : config.height, 0 : config.width]
    return np.stack([x * 255 // max(config.width - 1, 1), y * 255 // max(config.height - 1, 1),
                     np.full_like(x, 90)], axis=-1).astype(np.uint8)


def stream(model: StreamingWorldModel, frames: int, warmup_steps: int, keep_controls: int = 0
           ) -> tuple[dict, list[np.ndarray]]:
    """Stream as the node does; ms per output frame of each stage after warm-up, FPS, peak memory,
    and the first `keep_controls` control frames the steps were conditioned on."""
    config, device, n = model.config, model.device, model.frames_per_step
    steps = -(-frames // n)
    hands = synthetic_hands(n * (warmup_steps + steps))
    model.reset(reference_image(config))
    seconds = dict.fromkeys(STAGES, 0.0)
    controls = []
    start = None
    for i in range(warmup_steps + steps):
        if i == warmup_steps:
            sync(device)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            start = time.perf_counter()
        for j in range(n):
            model.push_skeleton(hands[i * n + j], stamp=(i * n + j) / config.fps)
        before_step = time.perf_counter()
        model.step()
        step_seconds = time.perf_counter() - before_step
        controls.extend(model.last_control[: max(0, keep_controls - len(controls))])
        if i >= warmup_steps:
            for stage in ("render", "encode", "dit", "decode"):
                seconds[stage] += model.timings.last[stage]
            seconds["reanchor"] += step_seconds - model.timings.last["total"]  # a due reset runs before the timed step
    wall = time.perf_counter() - start
    produced = steps * n
    seconds["other"] = wall - sum(seconds[s] for s in STAGES if s != "other")
    result = {stage: 1000.0 * value / produced for stage, value in seconds.items()}
    result.update(total=1000.0 * wall / produced, fps=produced / wall, frames=produced,
                  peak_gib=torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None,
                  kv_cache_mib=model.kv_cache_bytes / 2**20)
    return result, controls


def teacher_clip(model: StreamingWorldModel, controls: list[np.ndarray], clip_frames: int, steps: int) -> dict:
    """Seconds of the bidirectional teacher for one clip of the stream's own control frames (Wan's UniPC)."""
    config, device, dtype = model.config, model.device, model.dtype
    t = config.temporal_compression
    latent_frames = 1 + max(1, (clip_frames - 1) // t)
    clip_frames = 1 + t * (latent_frames - 1)
    picks = [controls[i % len(controls)] for i in range(clip_frames - 1)]
    control = np.stack([np.zeros_like(controls[0])] + picks)  # frame 0: the null action, as the stream starts
    sync(device)
    start = time.perf_counter()
    with torch.no_grad():
        reference = StreamingVAEEncoder(model.vae).push(rgb_to_tensor(reference_image(config)[None], device, dtype))
        control_latents = StreamingVAEEncoder(model.vae).push(rgb_to_tensor(control, device, dtype))
        sync(device)
        encoded = time.perf_counter()
        latents = generate_bidirectional(model.transformer, reference, control_latents, latent_frames, num_steps=steps,
                                         shift=config.shift, sampler="unipc",
                                         generator=torch.Generator(device).manual_seed(0))
        sync(device)
        denoised = time.perf_counter()
        video = tensor_to_rgb(StreamingVAEDecoder(model.vae).push(latents))
    end = time.perf_counter()
    if len(video) != clip_frames:
        raise RuntimeError(f"teacher decoded {len(video)} frames, expected {clip_frames}")
    return {"frames": clip_frames, "steps": steps, "encode_s": encoded - start, "dit_s": denoised - encoded,
            "decode_s": end - denoised, "total_s": end - start, "fps": clip_frames / (end - start)}


def machine_line(device: torch.device, config, dtype) -> str:
    gpu = ""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        gpu = f", GPU {props.name} ({props.total_memory / 2**30:.0f} GiB), CUDA {torch.version.cuda}"
    return (f"python {platform.python_version()}, torch {torch.__version__}{gpu}, cpus {os.cpu_count()}, "
            f"load average {os.getloadavg()[0]:.2f}, device {device}, dtype {str(dtype).replace('torch.', '')}, "
            f"config {config.name} {config.height}x{config.width}")


def row(name: str, r: dict | None, error: str | None = None) -> str:
    if r is None:
        return f"{name:<16}failed: {error}"
    peak = "-" if r["peak_gib"] is None else f"{r['peak_gib']:.1f}"
    stages = "".join(f"{r[s]:>9.2f}" for s in STAGES)
    return f"{name:<16}{stages}{r['total']:>9.2f}{r['fps']:>8.1f}{peak:>9}"


HEADER = f"{'variant':<16}" + "".join(f"{s:>9}" for s in ("render", "encode", "DiT", "decode", "reanchor", "other")) \
    + f"{'total':>9}{'FPS':>8}{'peak GiB':>9}"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help=f"a name in rynn_world.model.configs (default: {FULL_SIZE} with CUDA, else tiny)")
    parser.add_argument("--device", help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--checkpoint", default="", help="a world-model checkpoint directory (default: random weights)")
    parser.add_argument("--frames", type=int, default=200, help="output frames timed after warm-up (default 200)")
    parser.add_argument("--warmup", type=int, default=3, help="steps (of 4 frames) before timing (default 3)")
    parser.add_argument("--reanchor-every", type=int, default=81,
                        help="frames per chunk, the reference included (default 81, the paper's; 0 = never)")
    parser.add_argument("--attention", choices=("sdpa", *BACKENDS), default="sdpa")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--tiny-decoder", action="store_true")
    parser.add_argument("--cudnn-benchmark", action="store_true")
    parser.add_argument("--sweep", action="store_true", help="every variant in --variants, one table")
    parser.add_argument("--variants", default=",".join(SWEEP), help=f"with --sweep: a subset of {','.join(SWEEP)}")
    parser.add_argument("--teacher-frames", type=int, default=81, help="the teacher's clip (default 81, the paper's)")
    parser.add_argument("--teacher-steps", type=int, default=50, help="the teacher's denoising steps (default 50)")
    parser.add_argument("--budget-s", type=float, help="with --sweep: start no variant after this many seconds")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.frames < 1 or args.warmup < 1:
        parser.error("--frames and --warmup must be >= 1")
    return parser, args


def run(args) -> dict:
    device, name = resolve_device_and_config(args)
    config = get_config(name)
    torch.manual_seed(0)
    if args.sweep:
        variants = {v: SWEEP[v] for v in args.variants.split(",")} if set(args.variants.split(",")) <= set(SWEEP) else None
        if variants is None:
            raise BenchmarkSetupError(f"unknown --variants {sorted(set(args.variants.split(',')) - set(SWEEP))}; known: {list(SWEEP)}")
        if device.type == "cpu":
            variants = {k: v for k, v in variants.items() if v.attention not in GPU_ONLY_BACKENDS}
    else:
        variants = {"selected": Options(args.attention, args.compile, args.channels_last, args.tiny_decoder,
                                        args.cudnn_benchmark)}
    base, described, build_s = build_base(config, device, args.checkpoint, seed=0)
    reanchor = args.reanchor_every or None
    print("== machine ==")
    print(machine_line(device, config, base.dtype))
    params = sum(p.numel() for p in base.transformer.parameters())
    print(f"model: {described}; DiT {params / 1e6:,.1f} M parameters, built in {build_s:.1f} s")
    tiny, tiny_weights = tiny_decoder_for(config, args.checkpoint) if any(o.tiny_decoder for o in variants.values()) else (None, "")
    print(f"\n== streaming: {args.frames} frames after {args.warmup} warm-up steps, 4-step student, window "
          f"{config.window_blocks} blocks + sink, re-anchor every {reanchor or 'never'} frames; ms per output frame ==")
    if tiny is not None:
        print(f"(tiny decoder: {tiny_weights})")
    print(HEADER, flush=True)
    results, teacher = {}, None
    started = time.perf_counter()
    for label, options in variants.items():
        if results and args.budget_s is not None and time.perf_counter() - started > args.budget_s:
            results[label] = {"error": f"skipped: the {args.budget_s:.0f} s budget was spent"}
            print(row(label, None, results[label]["error"]), flush=True)
            continue
        try:
            model = variant_model(base, options, tiny, reanchor)
            keep = args.teacher_frames if teacher is None else 0
            results[label], controls = stream(model, args.frames, args.warmup, keep_controls=keep)
            print(row(label, results[label]) + f"   ({options.label})", flush=True)
        except Exception as error:  # one variant's failure (a kernel this GPU lacks) must not cost the others
            traceback.print_exc()
            results[label] = {"error": f"{type(error).__name__}: {error}"}
            print(row(label, None, results[label]["error"]), flush=True)
            continue
        finally:
            set_vae_memory_format(base, torch.contiguous_format)
            torch.backends.cudnn.benchmark = False
        if teacher is None and args.teacher_frames > 1:  # on the first variant's controls, before any compiling
            del model
            teacher = teacher_clip(base, controls, args.teacher_frames, args.teacher_steps)
    timed = {k: r for k, r in results.items() if "error" not in r}
    if not timed:
        raise RuntimeError("every variant failed (see above)")
    first = next(iter(timed))
    fastest = max(timed, key=lambda k: timed[k]["fps"])
    r = timed[first]
    modelled = r["render"] + r["encode"] + r["dit"] + r["decode"] + r["reanchor"]
    print(f"\nstreaming FPS ({first}): {r['fps']:.1f}; {r['total']:.2f} ms per frame; stages render+encode+DiT+decode+"
          f"re-anchor {modelled:.2f} ms ({100 * modelled / r['total']:.1f} % of the total); KV cache {r['kv_cache_mib']:.3g} MiB")
    if r["peak_gib"] is not None:
        print(f"peak GPU memory ({first}): {r['peak_gib']:.2f} GiB (torch.cuda.max_memory_allocated)")
    else:
        print(f"peak memory: CPU run, max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")
    print(f"fastest variant: {fastest} at {timed[fastest]['fps']:.1f} FPS ({timed[fastest]['total']:.2f} ms per frame)")
    summary = {"machine": machine_line(device, config, base.dtype), "model": described, "variants": results,
               "teacher": teacher, "paper_h100": PAPER_H100}
    if teacher is not None:
        print(f"\n== bidirectional teacher, the same clip: {teacher['frames']} frames, {teacher['steps']} UniPC steps ==")
        print(f"encode {teacher['encode_s']:.2f} s, DiT {teacher['dit_s']:.2f} s, decode {teacher['decode_s']:.2f} s, "
              f"total {teacher['total_s']:.2f} s = {teacher['fps']:.2f} FPS")
        summary["ratio"] = r["fps"] / teacher["fps"]
        summary["ratio_fastest"] = timed[fastest]["fps"] / teacher["fps"]
        print(f"causal / bidirectional: {summary['ratio']:.1f}x ({first}), {summary['ratio_fastest']:.1f}x ({fastest})  "
              f"(paper, H100: {PAPER_H100['fps']} / {PAPER_H100['teacher_fps']} = "
              f"{PAPER_H100['fps'] / PAPER_H100['teacher_fps']:.1f}x)")
    return summary


def main(argv=None) -> int:
    parser, args = parse_args(argv)
    diffusers_logging.set_verbosity_error()
    try:
        summary = run(args)
    except BenchmarkSetupError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
