"""Digital episodes from recorded ones: ``python -m rynn_world.engine --episodes DIR... --out DIR``.

Examples (docs/data_engine.md)::

    # task-operator episodes from the generator, anchored on each episode's first frame
    python -m rynn_world.episodes.generate --tasks block_pushing --episodes 100 --out data/task_eps
    python -m rynn_world.engine --episodes data/task_eps --out data/digital_eps
    # the paper's chunked re-anchoring on the real frames, every 81 frames
    python -m rynn_world.engine --episodes data/task_eps --out data/digital_reanchor --reference reanchor
    # a new scene from an image; recorder bags are accepted as well
    python -m rynn_world.engine --episodes outputs/bags --out data/digital_new --reference-image scene.png
    # the full model on a GPU
    python -m rynn_world.engine --episodes data/task_eps --out data/digital_5b --config wan2.2-ti2v-5b \\
        --checkpoint /weights/rynnworld --device cuda --batch 8
    # every GPU of the machine, one process each (accelerate launch --num_processes 8 works the same)
    torchrun --standalone --nproc-per-node 8 -m rynn_world.engine --episodes data/task_eps --out data/digital_5b \\
        --config wan2.2-ti2v-5b --checkpoint /weights/rynnworld --device cuda --batch 8
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from rynn_robot_bridge.recording.metadata import NO_CHECKPOINT, checkpoint_sha256, portable_name

from ..checkpoints import packaged_checkpoint
from ..model.configs import get_config
from ..nodes.model_loading import CHOICES, load_streaming_model
from .core import PAPER_CHUNK_FRAMES, DataEngine, EngineError, EngineSettings, ModelInfo, Reference, find_sources
from .ranks import join_launch


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rynn_world.engine", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--episodes", nargs="+", type=Path, required=True,
                        help="generator/clips roots (index.json), episode directories, or recorder bags / directories of them")
    parser.add_argument("--out", type=Path, required=True, help="output directory (rerun the same command to resume)")
    reference = parser.add_mutually_exclusive_group()
    reference.add_argument("--reference", choices=("first", "reanchor"), default="first",
                           help="first: each episode's first frame; reanchor: its real frame every --chunk-frames frames")
    reference.add_argument("--reference-image", type=Path, help="an image of a new scene as every episode's reference")
    parser.add_argument("--chunk-frames", type=int, default=PAPER_CHUNK_FRAMES,
                        help="--reference reanchor: frames per chunk, the reference included (paper: 81)")
    parser.add_argument("--reanchor-every", type=int, default=Reference().reanchor_every,
                        help="first / image: re-anchor on the last generated frame every N frames, as the live node (0: never)")
    parser.add_argument("--config", default="embedded_cpu", help="world-model config (embedded_cpu, tiny, wan2.2-ti2v-5b)")
    parser.add_argument("--checkpoint", default="", help="checkpoint directory (default: the config's packaged one)")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto")
    parser.add_argument("--batch", type=int, default=4, help="episodes streamed through the model at once")
    parser.add_argument("--decoder", choices=CHOICES, default="auto", help="as the node's decoder parameter")
    parser.add_argument("--encoder", choices=CHOICES, default="auto", help="as the node's encoder parameter")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="only the first N source episodes (0: all)")
    parser.add_argument("--no-lerobot", action="store_true", help="skip the LeRobot v3 export (<out>/lerobot)")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def model_info(config_name: str, checkpoint: str, device: str) -> ModelInfo:
    """What the manifest says about the weights (the description is filled in once they are loaded)."""
    path = Path(checkpoint).expanduser() if checkpoint else packaged_checkpoint(config_name)
    return ModelInfo(config=config_name, checkpoint=portable_name(path) if path else NO_CHECKPOINT,
                     checkpoint_sha256=checkpoint_sha256(path), description="", device=device)


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    ranks = join_launch()
    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    device = ranks.device(device)
    config = get_config(args.config)
    try:
        reference = Reference(policy="image" if args.reference_image else args.reference, image_path=args.reference_image,
                              chunk_frames=args.chunk_frames, reanchor_every=args.reanchor_every or None)
        sources = None
        if ranks.is_main:  # only one process exports recorder bags and hashes the sources
            sources = find_sources(args.episodes, args.out, progress=not args.no_progress)
            sources = sources[: args.limit] if args.limit else sources
        sources = ranks.from_main(sources)

        def factory(batch_size: int):
            return load_streaming_model(config, args.checkpoint, device, args.seed, "auto",
                                        decoder=args.decoder, encoder=args.encoder, batch_size=batch_size)

        info = model_info(config.name, args.checkpoint, device)
        engine = DataEngine(args.out, factory, info, EngineSettings(reference=reference, batch_size=args.batch, seed=args.seed,
                                                                    lerobot=not args.no_lerobot, progress=not args.no_progress),
                            ranks)
        todo = engine.pending(sources)
        if ranks.is_main:
            print(f"{len(sources)} source episodes, {len(sources) - len(todo)} already done, {len(todo)} to generate "
                  f"({config.name} on {device}, reference {reference.policy}, batch {args.batch}"
                  f"{f', {ranks.world_size} processes' if ranks.world_size > 1 else ''})", flush=True)
        start = time.perf_counter()
        engine.run(sources)
    except (EngineError, FileNotFoundError) as error:
        sys.exit(f"engine: {error}")
    finally:
        ranks.leave()
    wall = time.perf_counter() - start
    timing = engine.timing
    who = f"rank {ranks.rank}/{ranks.world_size}: " if ranks.world_size > 1 else ""
    if engine.model_info.description and ranks.is_main:
        print(f"model: {engine.model_info.description}")
    if timing["episodes"]:
        fps = timing["frames"] / timing["seconds"]
        per_cpu_second = timing["frames"] / max(timing["cpu_seconds"], 1e-9)
        print(f"{who}generated {timing['episodes']} episodes, {timing['frames']} frames in {timing['seconds']:.1f} s: "
              f"{fps:.1f} frames/s = {fps / config.fps:.2f}x real time at {config.fps:g} FPS "
              f"({wall:.1f} s wall including the LeRobot export); CPU time {timing['cpu_seconds']:.1f} s = "
              f"{per_cpu_second:.1f} frames per CPU-second ({per_cpu_second / config.fps:.2f}x real time per busy core; "
              f"torch threads {torch.get_num_threads()})")
    if ranks.is_main:
        print(f"manifest: {args.out / 'manifest.json'}"
              + ("" if args.no_lerobot else f"; LeRobot v3 dataset: {args.out / 'lerobot'}"))


if __name__ == "__main__":
    main()
