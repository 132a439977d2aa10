"""The data engine's ROS-free core: source episodes in, digital episodes, a manifest and a LeRobot
dataset out.

Sources are episode directories in the generator's layout (``rynn_world.episodes.generate``:
``bag/``, ``frames.npz``, ``episode.json``, listed in the root's ``index.json``); the recorder's bags
are first turned into that layout by ``rynn_robot_bridge.export.clips`` (the project's one path from a
recorded bag to frame-clocked episodes), into ``<out>/_recorded_sources``.

Per source episode the engine reads its bag as training does (``data.robot_episodes.read_episode``),
renders each frame's operator skeleton as the node does (``data.clips.render_skeleton`` ->
``render_control``), and streams the model on it with ``evaluation.generation.stream_model``: the live
node's StreamingWorldModel, reset on the reference, one control frame per model tick, a step per block,
re-anchored as configured. Episodes go through the model several at once, as a batch of lockstep
streams (StreamingWorldModel ``batch_size``), grouped by length; shorter ones are padded with their
last control frame and trimmed.

Reference policies (``Reference``):
- ``first``: the episode's own first frame; the stream then re-anchors on its last generated frame
  every ``reanchor_every`` frames, as the live node does in digital mode (its default, 17);
- ``reanchor``: the paper's Sec. 4.1: 81-frame chunks (reference + 80 generated frames), each chunk
  started from the source's real frame at that instant (frames 0, 80, 160, ...);
- ``image``: a user-given image of a new scene (converted by ``image_input.to_model_rgb``), re-anchored
  on generated frames as ``first``.

A digital episode keeps the source's bag schema (written by the generator's ``EpisodeBagWriter``):
actions, joint states and skeletons are the source's messages copied byte for byte at their stamps;
each camera image is replaced by the generated frame at the same stamp (at the model's size, with
CameraInfo scaled to it); the reference image is the digital reference. Its ``frames.npz`` holds the
source's stamps, actions and joint positions unchanged (the source's object masks describe the real
frames and are left out). Every episode is built in a ``.partial`` directory and renamed into place
when complete, so a rerun redoes half-written ones and skips complete ones (resumable).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np
from rosbags.rosbag2 import Reader
from tqdm import tqdm

from rynn_common.directories import directory_in_progress
from rynn_robot_bridge.episodes.bag_writer import TOPICS, EpisodeBagWriter
from rynn_robot_bridge.episodes.layout import episode_dir, write_episode_files, write_index
from rynn_robot_bridge.export.bag_episode import bag_sha256, find_bags
from rynn_robot_bridge.export.clips import export_clips
from rynn_robot_bridge.export.lerobot import export as export_lerobot
from rynn_robot_bridge.recording.episode_bag import write_json_atomically
from rynn_robot_bridge.recording.metadata import file_sha256

from ..data.clips import render_skeleton, resize_frames
from ..data.robot_episodes import read_episode
from ..evaluation.generation import stream_model
from ..image_input import to_model_rgb
from ..live_session import SessionSettings
from ..streaming import StreamingWorldModel
from .ranks import Ranks

REFERENCE_POLICIES = ("first", "reanchor", "image")
PAPER_CHUNK_FRAMES = 81  # Sec. 4.1: the reference + 80 generated frames per chunk
MANIFEST_NAME = "manifest.json"
LEROBOT_DIR = "lerobot"
RECORDED_SOURCES_DIR = "_recorded_sources"  # recorder bags exported to the generator's layout
MANIFEST_FORMAT = 1
FRAMES_KEPT = ("stamp_ns", "action", "joint_position")  # frames.npz arrays copied from the source
_TOPIC_KEYS = {topic: key for key, (topic, _) in TOPICS.items()}


class EngineError(ValueError):
    """A source or an output directory the engine cannot use; the message says which and why."""


@dataclass(frozen=True)
class Reference:
    """How each digital episode is anchored (module docstring)."""

    policy: str = "first"
    image_path: Path | None = None  # policy "image"
    chunk_frames: int = PAPER_CHUNK_FRAMES  # policy "reanchor": frames per chunk, the reference included
    reanchor_every: int | None = SessionSettings().reanchor_every  # "first" / "image": the live node's

    def __post_init__(self):
        if self.policy not in REFERENCE_POLICIES:
            raise EngineError(f"reference policy must be one of {REFERENCE_POLICIES}, got {self.policy!r}")
        if (self.policy == "image") != (self.image_path is not None):
            raise EngineError("the 'image' reference policy needs an image file, and only it takes one")

    @property
    def model_reanchor_every(self) -> int | None:
        return self.chunk_frames if self.policy == "reanchor" else self.reanchor_every

    def describe(self) -> dict:
        image = None if self.image_path is None else Path(self.image_path)
        return {"policy": self.policy, "image": None if image is None else str(image),
                "image_sha256": None if image is None else file_sha256(image),
                "reanchor_every": self.model_reanchor_every,
                "anchors": {"first": "source frame 0, then the last generated frame",
                            "reanchor": "the source's real frame at each chunk start",
                            "image": "the given image, then the last generated frame"}[self.policy]}


@dataclass(frozen=True)
class ModelInfo:
    """What generated the frames, as the manifest records it."""

    config: str
    checkpoint: str  # a portable name of the weights ("none": random weights)
    checkpoint_sha256: str
    description: str
    device: str


@dataclass(frozen=True)
class EngineSettings:
    reference: Reference = Reference()
    batch_size: int = 4  # streams per batch (at most)
    seed: int = 0
    lerobot: bool = True  # (re)build <out>/lerobot when episodes were added
    progress: bool = True


@dataclass(frozen=True)
class SourceEpisode:
    directory: Path  # an episode directory in the generator's layout
    task: str
    episode: int
    frames: int
    fps: float
    bag_sha256: str  # of the episode's MCAP file
    summary: dict = field(repr=False)
    recorded_bag: dict | None = None  # {"path", "sha256"} when exported from a recorder bag

    @property
    def output_name(self) -> str:
        return f"{self.task}/episode_{self.episode:04d}"

    def describe(self) -> dict:
        return {"episode_dir": str(self.directory), "bag_sha256": self.bag_sha256, "task": self.task,
                "episode": self.episode, "frames": self.frames, "fps": self.fps, "recorded_bag": self.recorded_bag}


def find_sources(paths: list[Path], out: Path | None = None, progress: bool = False) -> list[SourceEpisode]:
    """Source episodes named by ``paths``: generator/clips roots (with ``index.json``), single episode
    directories, or recorder bags / directories of them (exported first into ``<out>/_recorded_sources``)."""
    sources: list[SourceEpisode] = []
    bags: list[Path] = []
    for path in map(Path, paths):
        if (path / "index.json").is_file():
            root = path
            for entry in json.loads((path / "index.json").read_text())["episodes"]:
                sources.append(_source(root / Path(entry["bag"]).parent))
        elif (path / "episode.json").is_file() and (path / "bag").is_dir():
            sources.append(_source(path))
        elif (path / "metadata.yaml").is_file() and (path.parent / "episode.json").is_file():
            sources.append(_source(path.parent))
        elif path.exists():
            bags.append(path)
        else:
            raise EngineError(f"{path}: no such episode, episode root or bag")
    if bags:
        if out is None:
            raise EngineError("recorder bags are exported to episodes under the output directory; pass out")
        found = find_bags(bags)
        staging = Path(out) / RECORDED_SOURCES_DIR
        entries, skipped = export_clips(found, staging, progress=progress)
        if skipped:
            raise EngineError("recorder bags that cannot become episodes: "
                              + "; ".join(f"{bag}: {reason}" for bag, reason in skipped.items()))
        by_sha = {entry["source_bag_sha256"]: entry for entry in entries}
        for bag in found:
            sha = bag_sha256(bag)
            source = _source(staging / Path(by_sha[sha]["bag"]).parent)
            sources.append(SourceEpisode(**{**source.__dict__, "recorded_bag": {"path": str(bag), "sha256": sha}}))
    names = [s.output_name for s in sources]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise EngineError(f"several sources are {', '.join(duplicates)}: generate them into separate --out directories")
    return sources


def _source(directory: Path) -> SourceEpisode:
    directory = Path(directory)
    summary = json.loads((directory / "episode.json").read_text())
    if not (directory / "frames.npz").is_file():
        raise EngineError(f"{directory}: no frames.npz (episodes come from the generator or export.clips)")
    return SourceEpisode(directory=directory, task=summary["task"], episode=int(summary["episode"]),
                         frames=int(summary["frames"]), fps=float(summary["fps"]),
                         bag_sha256=bag_sha256(directory / "bag"), summary=summary)


@dataclass
class _Prepared:
    """One source episode at the model's size, ready to stream."""

    source: SourceEpisode
    reference: np.ndarray  # (H, W, 3): the digital frame 0
    control: np.ndarray  # (T, H, W, 3) control frames
    real: np.ndarray | None  # (T, H, W, 3) the source's frames (policy "reanchor")
    intrinsics: object


def read_manifest(out: Path) -> dict:
    path = Path(out) / MANIFEST_NAME
    return json.loads(path.read_text()) if path.is_file() else {"format": MANIFEST_FORMAT, "episodes": []}


class DataEngine:
    """Generates digital episodes into ``out``; ``model_factory(batch_size)`` builds the streaming model
    and says what it loaded, ``(model, description)`` (the CLI loads it as the node does:
    ``nodes.model_loading.load_streaming_model``). Launched as several processes (``ranks``), each makes
    its share of the batches and rank 0 writes the manifest and the LeRobot dataset (engine.ranks)."""

    def __init__(self, out: Path, model_factory: Callable[[int], tuple[StreamingWorldModel, str]], model_info: ModelInfo,
                 settings: EngineSettings = EngineSettings(), ranks: Ranks | None = None):
        self.out = Path(out)
        self.model_factory = model_factory
        self.model_info = model_info
        self.settings = settings
        self.ranks = ranks or Ranks()  # one process unless launched as several
        self.reference_image = None
        if settings.reference.policy == "image":
            self.reference_image = _read_image(settings.reference.image_path)
        self._reference_description = settings.reference.describe()
        # this run's generation (reading, model, writing): wall seconds and this process's CPU seconds
        self.timing = {"episodes": 0, "frames": 0, "seconds": 0.0, "cpu_seconds": 0.0}

    # ---- planning ----------------------------------------------------------------------------

    def pending(self, sources: list[SourceEpisode]) -> list[SourceEpisode]:
        """The sources without a complete digital episode in ``out``; raises when an existing one was
        made from another source, reference or model (outputs are never silently mixed)."""
        todo = []
        for source in sources:
            done = self._existing_entry(source)
            if done is None:
                todo.append(source)
                continue
            expected = {"source_bag_sha256": source.bag_sha256, "reference": self._reference_description,
                        "checkpoint_sha256": self.model_info.checkpoint_sha256, "config": self.model_info.config}
            found = {"source_bag_sha256": done["source"]["bag_sha256"], "reference": done["reference"],
                     "checkpoint_sha256": done["model"]["checkpoint_sha256"], "config": done["model"]["config"]}
            differs = [key for key in expected if expected[key] != found[key]]
            if differs:
                raise EngineError(f"{self.out / source.output_name} was generated with another "
                                  f"{', '.join(differs)}; write this run into a new --out directory")
        return todo

    def _existing_entry(self, source: SourceEpisode) -> dict | None:
        path = self.out / source.output_name / "episode.json"
        return json.loads(path.read_text()).get("digital") if path.is_file() else None

    def batches(self, sources: list[SourceEpisode]) -> list[list[SourceEpisode]]:
        """Episodes of similar length together, in as few batches as ``batch_size`` allows, all of one size.
        Planned over every source, done or not: a batch's frames depend only on its episodes and the seed,
        so a resumed run, or a run over another number of processes, makes the same frames."""
        if not sources:
            return []
        count = math.ceil(len(sources) / max(1, self.settings.batch_size))
        size = math.ceil(len(sources) / count)
        ordered = sorted(sources, key=lambda s: (s.frames, s.output_name))
        return [ordered[i:i + size] for i in range(0, len(ordered), size)]

    # ---- running -----------------------------------------------------------------------------

    def run(self, sources: list[SourceEpisode], on_episode: Callable[[dict], None] | None = None) -> list[dict]:
        """Generate every pending episode of this process's batches; returns the manifest entries it wrote.
        ``on_episode`` is told about each finished episode (its manifest entry)."""
        self.out.mkdir(parents=True, exist_ok=True)
        pending = {s.output_name for s in self.pending(sources)}
        planned = self.batches(sources)
        mine = [batch for index, batch in enumerate(planned)
                if self.ranks.owns(index) and any(s.output_name in pending for s in batch)]
        written: list[dict] = []
        if mine:
            model, description = self.model_factory(len(planned[0]))
            self.model_info = replace(self.model_info, description=description)
            todo = sum(s.output_name in pending for batch in mine for s in batch)
            bar = tqdm(total=todo, desc="digital episodes", unit="ep", disable=not self.settings.progress)
            try:
                for batch in mine:
                    for entry in self._run_batch(model, batch, pending):
                        written.append(entry)
                        bar.update(1)
                        if on_episode is not None:
                            on_episode(entry)
                    bar.set_postfix(fps=f"{self.timing['frames'] / max(self.timing['seconds'], 1e-9):.1f}")
            finally:
                bar.close()
                self._write_manifest_on_main()
        written_by_all = self.ranks.total(len(written))  # every rank finished
        if self.ranks.is_main:
            self.write_manifest()
            if self.settings.lerobot and (written_by_all or self._lerobot_episodes() != len(read_manifest(self.out)["episodes"])):
                self.export_lerobot()
        return written

    def _lerobot_episodes(self) -> int | None:
        """Episodes in the LeRobot dataset of ``out`` (None when there is none)."""
        info = self.out / LEROBOT_DIR / "meta" / "info.json"
        return json.loads(info.read_text())["total_episodes"] if info.is_file() else None

    def _run_batch(self, model: StreamingWorldModel, batch: list[SourceEpisode], pending: set[str]):
        """The whole batch generated; its pending episodes written (a resumed batch keeps its finished ones)."""
        start, cpu_start = time.perf_counter(), time.process_time()
        prepared = [self._prepare(source, model) for source in batch]
        streams = prepared + [prepared[-1]] * (model.batch_size - len(prepared))  # pad a short last batch
        frames = self._generate(model, streams, _batch_seed(self.settings.seed, [p.source for p in streams]))
        to_write = [(i, item) for i, item in enumerate(prepared) if item.source.output_name in pending]
        per_episode = (time.perf_counter() - start) / len(to_write)
        for i, item in to_write:
            episode_start = time.perf_counter()
            entry = self._write(item, frames[i][: item.source.frames], model, per_episode)
            self.timing["episodes"] += 1
            self.timing["frames"] += item.source.frames
            self.timing["seconds"] += per_episode + time.perf_counter() - episode_start
            self.timing["cpu_seconds"] += time.process_time() - cpu_start
            cpu_start = time.process_time()
            self._write_manifest_on_main()
            yield entry

    def _prepare(self, source: SourceEpisode, model: StreamingWorldModel) -> _Prepared:
        config = model.config
        if abs(source.fps - config.fps) > 1e-6:
            raise EngineError(f"{source.directory}: frames at {source.fps:g} FPS, the model runs at {config.fps:g}; "
                              "export the bags at the model's rate (python -m rynn_robot_bridge.export.clips --fps)")
        episode = read_episode(source.directory)
        if len(episode.frames) != source.frames:
            raise EngineError(f"{source.directory}: {len(episode.frames)} images, its episode.json says {source.frames}")
        control = render_skeleton(episode.joints_camera, episode.valid, episode.intrinsics, config.height, config.width,
                                  episode.elbows)
        policy = self.settings.reference.policy
        real = resize_frames(episode.frames, config.height, config.width) if policy == "reanchor" else None
        first = self.reference_image if policy == "image" else episode.frames[0]
        reference = to_model_rgb(first, config.height, config.width, "reference image")
        return _Prepared(source, reference, control, real, episode.intrinsics)

    def _generate(self, model: StreamingWorldModel, streams: list[_Prepared], seed: int) -> list[np.ndarray]:
        """Each stream's digital frames (its reference, then the generated frames), all through one
        ``stream_model`` call on the batch."""
        length = max(len(p.control) for p in streams)
        step = model.frames_per_step
        length = 1 + step * math.ceil((length - 1) / step)  # whole blocks: the last frames are generated too
        control = np.stack([_pad(p.control, length) for p in streams], axis=1)  # (T, B, H, W, 3)
        real = None
        if self.settings.reference.policy == "reanchor":
            real = np.stack([_pad(p.real, length) for p in streams], axis=1)
        references = np.stack([p.reference for p in streams])
        model.reanchor_every = self.settings.reference.model_reanchor_every
        model.generator.manual_seed(seed)
        if model.batch_size == 1:
            generated = stream_model(model, references[0], control[:, 0], None if real is None else real[:, 0])[None]
        else:
            generated = stream_model(model, references, control, real)
        return [np.concatenate([p.reference[None], generated[b]]) for b, p in enumerate(streams)]

    def _write(self, item: _Prepared, frames: np.ndarray, model: StreamingWorldModel, seconds: float) -> dict:
        source, config = item.source, model.config
        if len(frames) != source.frames:
            raise EngineError(f"{source.directory}: generated {len(frames)} frames for {source.frames}")
        final = episode_dir(self.out, source.task, source.episode)
        entry = {
            "output": source.output_name,
            "source": source.describe(),
            "reference": self._reference_description,
            "model": asdict(self.model_info),
            "frames": int(source.frames),
            "fps": config.fps,
            "image_width": config.width,
            "image_height": config.height,
            "batch_size": model.batch_size,
            "seed": self.settings.seed,
            "generation_s": round(seconds, 3),
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        with directory_in_progress(final) as partial:
            summary = {k: v for k, v in source.summary.items() if k not in ("mask_objects",)}
            summary.update(
                episode=source.episode, frames=int(source.frames), image_width=config.width, image_height=config.height,
                source="digital", mode="digital", bag=f"{source.output_name}/bag",
                frames_file=f"{source.output_name}/frames.npz", digital=entry,
            )
            self._write_bag(partial / "bag", source, frames, item, summary)
            with np.load(source.directory / "frames.npz") as arrays:
                kept = {name: arrays[name] for name in FRAMES_KEPT if name in arrays}
            write_episode_files(partial, kept, summary)
        return entry

    def _write_bag(self, path: Path, source: SourceEpisode, frames: np.ndarray, item: _Prepared, summary: dict) -> None:
        """The source bag's messages in order: images and the reference replaced, the rest copied byte for byte."""
        height, width = frames.shape[1:3]
        writer = EpisodeBagWriter(path, item.intrinsics.scaled(width, height))
        images, summary_stamp, dropped = 0, None, {}
        with Reader(source.directory / "bag") as reader:
            for connection, stamp, raw in reader.messages():
                key = _TOPIC_KEYS.get(connection.topic)
                if key == "image":
                    if images >= len(frames):
                        raise EngineError(f"{source.directory}: more images than frames")
                    writer.write_frame(frames[images], stamp)
                    images += 1
                elif key == "reference_image":
                    writer.write_reference_image(frames[0], stamp)
                elif key == "episode":
                    summary_stamp = stamp
                elif key in ("skeleton", "action", "joint_states"):
                    writer.copy_message(key, raw, stamp)
                elif key != "camera_info":  # CameraInfo is written with each frame, at the new size
                    dropped[connection.topic] = dropped.get(connection.topic, 0) + 1
        if images != len(frames):
            raise EngineError(f"{source.directory}: {images} images in the bag for {len(frames)} frames")
        summary["dropped_topics"] = dropped
        writer.write_episode_summary(summary, summary_stamp if summary_stamp is not None else 0)
        info = summary["digital"]
        writer.close({
            "task": source.task, "mode": "digital", "source_bag_sha256": source.bag_sha256,
            "reference_policy": info["reference"]["policy"], "world_model_checkpoint": info["model"]["checkpoint"],
            "world_model_checkpoint_sha256": info["model"]["checkpoint_sha256"],
            "success": str(source.summary.get("success")).lower(),
            "operator_id": str(source.summary.get("operator_id", "")),
        })

    # ---- outputs -----------------------------------------------------------------------------

    def _write_manifest_on_main(self) -> None:
        """The manifest as it stands, while generating: rank 0 alone writes it (two writers would share
        its temporary file); the other ranks' episodes join it as they are found complete on disk."""
        if self.ranks.is_main:
            self.write_manifest()

    def write_manifest(self) -> dict:
        """``manifest.json`` and ``index.json`` from the complete episodes on disk (a crash between an
        episode's rename and the manifest loses nothing: the episode carries its own entry)."""
        entries = write_index(self.out) if self.out.is_dir() else []
        manifest = {
            "format": MANIFEST_FORMAT,
            "engine": "rynn_world.engine",
            "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "episodes": [e["digital"] for e in entries if "digital" in e],
            "lerobot": LEROBOT_DIR if self.settings.lerobot else None,
        }
        write_json_atomically(self.out / MANIFEST_NAME, manifest)
        return manifest

    def export_lerobot(self) -> dict | None:
        """``<out>/lerobot``: every digital episode as one LeRobot v3 dataset (rebuilt whole, renamed into place)."""
        manifest = read_manifest(self.out)
        bags = [self.out / entry["output"] / "bag" for entry in manifest["episodes"]]
        if not bags:
            return None
        fps = {entry["fps"] for entry in manifest["episodes"]}
        if len(fps) != 1:
            raise EngineError(f"digital episodes at several frame rates {sorted(fps)}: one LeRobot dataset needs one")
        with directory_in_progress(self.out / LEROBOT_DIR) as partial:
            info, skipped = export_lerobot(bags, partial, int(round(fps.pop())), progress=False)
        if skipped:
            raise EngineError(f"digital episodes the LeRobot export skipped: {skipped}")
        return info


def _pad(frames: np.ndarray, length: int) -> np.ndarray:
    """``frames`` held on their last frame up to ``length``."""
    if len(frames) >= length:
        return frames[:length]
    return np.concatenate([frames, np.repeat(frames[-1:], length - len(frames), axis=0)])


def _batch_seed(seed: int, sources: list[SourceEpisode]) -> int:
    """The batch's noise seed: a function of the run's seed and its episodes, so a batch regenerates the same."""
    digest = hashlib.sha256(json.dumps([seed, [s.bag_sha256 for s in sources]]).encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def _read_image(path: Path) -> np.ndarray:
    """An image file as RGB (the node reads its reference_image file the same way: OpenCV, BGR -> RGB)."""
    import cv2

    image = cv2.imread(str(Path(path).expanduser()), cv2.IMREAD_COLOR)
    if image is None:
        raise EngineError(f"reference image {path} cannot be read as an image")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
