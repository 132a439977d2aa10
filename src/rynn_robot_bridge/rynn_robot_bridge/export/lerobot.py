"""Recorded episodes -> a LeRobot dataset (v3.0 layout).

``python -m rynn_robot_bridge.export.lerobot --bags DIR... --out DIR --fps 16``

Layout: ``data/chunk-000/file-NNN.parquet`` (many episodes per file),
``videos/observation.images.egocentric/chunk-000/file-NNN.mp4`` (episodes
concatenated; each episode's span in ``meta/episodes`` as from/to timestamps),
``meta/info.json`` (features, fps, path templates), ``meta/stats.json``,
``meta/tasks.parquet`` and ``meta/episodes/chunk-000/file-000.parquet``.
``observation.state`` is /joint_states and ``action`` /rynn/action (54-D, the
RobotAction layout); ``mode`` (0 real, 1 digital) is a per-frame feature and an
episode column, so real and digital data can be mixed or split. The task comes
from the episode metadata (``--task`` for bags recorded without the recorder).
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from rynn_common.action_layout import ACTION_DIM, joint_names
from rynn_robot_bridge.export.bag_episode import AlignedEpisode, EpisodeExportError, ExportTopics, bag_sha256, find_bags, load_episode

CODEBASE_VERSION = "v3.0"
IMAGE_KEY = "observation.images.egocentric"
CHUNK_FILE = "chunk-{chunk_index:03d}/file-{file_index:03d}"
DATA_PATH = "data/" + CHUNK_FILE + ".parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK_FILE + ".mp4"
EPISODES_PATH = "meta/episodes/" + CHUNK_FILE + ".parquet"
CHUNKS_SIZE = 1000
DATA_FILE_MB = 100
VIDEO_FILE_MB = 200
VIDEO_GOP = 2  # LeRobot's default: any frame is at most one frame from a keyframe, so seeking is cheap
IMAGE_STATS_FRAMES = 100  # frames per episode sampled for image statistics


def feature_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """min/max/mean/std over axis 0 plus the count, as LeRobot's stats.json holds them."""
    values = np.asarray(values, dtype=np.float64)
    return {"min": values.min(0), "max": values.max(0), "mean": values.mean(0), "std": values.std(0),
            "count": np.array([len(values)])}


def merge_stats(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Statistics of the union of several parts (count-weighted mean, pooled variance)."""
    counts = np.array([p["count"][0] for p in parts], dtype=np.float64)
    weights = counts / counts.sum()
    mean = sum(w * p["mean"] for w, p in zip(weights, parts))
    variance = sum(w * (p["std"] ** 2 + (p["mean"] - mean) ** 2) for w, p in zip(weights, parts))
    return {"min": np.min([p["min"] for p in parts], axis=0), "max": np.max([p["max"] for p in parts], axis=0),
            "mean": mean, "std": np.sqrt(variance), "count": np.array([int(counts.sum())])}


class LeRobotDatasetWriter:
    """Appends episodes to a new LeRobot v3 dataset; ``finish()`` writes the metadata."""

    def __init__(self, root: Path, fps: int, robot_type: str = "rynn_bimanual", vcodec: str = "libx264", crf: int = 23):
        self.root = Path(root)
        if self.root.exists() and any(self.root.iterdir()):
            raise FileExistsError(f"{self.root} is not empty; export into a new directory")
        self.fps, self.robot_type, self.vcodec, self.crf = int(fps), robot_type, vcodec, crf
        self.image_shape: tuple[int, int, int] | None = None
        self.tasks: dict[str, int] = {}
        self.episodes: list[dict] = []
        self.episode_stats: list[dict[str, dict[str, np.ndarray]]] = []
        self.total_frames = 0
        self._data_file, self._data_writer, self._data_bytes = 0, None, 0
        self._video_file, self._video, self._video_frames = 0, None, 0

    # --- episodes ---------------------------------------------------------------------------

    def add(self, episode: AlignedEpisode, task: str) -> dict:
        """Write one episode (frames, parquet rows, per-episode stats); returns its meta/episodes row."""
        if self.image_shape is None:
            if episode.image_shape[0] % 2 or episode.image_shape[1] % 2:
                raise EpisodeExportError(f"{episode.bag}: H.264/yuv420p needs an even image size, got {episode.image_shape}")
            self.image_shape = episode.image_shape
        elif episode.image_shape != self.image_shape:
            raise EpisodeExportError(f"{episode.bag}: images are {episode.image_shape}, the dataset's {self.image_shape}")
        task_index = self.tasks.setdefault(task, len(self.tasks))
        index = len(self.episodes)
        n = episode.length
        video_from = self._video_frames
        image_samples = set(np.linspace(0, n - 1, min(n, IMAGE_STATS_FRAMES)).astype(int).tolist())
        sampled = []
        for frame_index, rgb in enumerate(episode.frames()):
            self._encode(rgb)
            if frame_index in image_samples:
                sampled.append(rgb[::4, ::4].reshape(-1, 3) / 255.0)
        indices = {  # LeRobot's index features, each with statistics like every other feature
            "timestamp": np.arange(n, dtype=np.float32) / self.fps,
            "frame_index": np.arange(n, dtype=np.int64),
            "episode_index": np.full(n, index, dtype=np.int64),
            "index": self.total_frames + np.arange(n, dtype=np.int64),
            "task_index": np.full(n, task_index, dtype=np.int64),
        }
        table = pa.table({
            "observation.state": _vectors(episode.state),
            "action": _vectors(episode.action),
            **{name: pa.array(values) for name, values in indices.items()},
            "mode": pa.array(episode.mode, pa.int64()),
        })
        data_file = self._append_data(table)
        pixels = np.concatenate(sampled)
        image = feature_stats(pixels)
        image = {k: (v.reshape(3, 1, 1) if k != "count" else np.array([len(sampled)])) for k, v in image.items()}
        stats = {"observation.state": feature_stats(episode.state), "action": feature_stats(episode.action),
                 IMAGE_KEY: image, "mode": feature_stats(episode.mode[:, None]),
                 **{name: feature_stats(values[:, None]) for name, values in indices.items()}}
        self.episode_stats.append(stats)
        row = {
            "episode_index": index, "tasks": [task], "length": n,
            "data/chunk_index": 0, "data/file_index": data_file,
            "dataset_from_index": self.total_frames, "dataset_to_index": self.total_frames + n,
            f"videos/{IMAGE_KEY}/chunk_index": 0, f"videos/{IMAGE_KEY}/file_index": self._video_file,
            f"videos/{IMAGE_KEY}/from_timestamp": video_from / self.fps,
            f"videos/{IMAGE_KEY}/to_timestamp": self._video_frames / self.fps,
            "meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0,
            "mode": episode.mode_label, "operator_id": episode.metadata.get("operator_id", ""),
            "source_bag": episode.bag.name, "source_bag_sha256": bag_sha256(episode.bag),
            "robot_description_sha256": episode.metadata.get("robot_description_sha256", ""),
            "world_model_checkpoint_sha256": episode.metadata.get("world_model_checkpoint_sha256", ""),
            "skipped_messages": json.dumps(dict(episode.skipped), sort_keys=True),
        }
        for feature, values in stats.items():
            for name, value in values.items():
                row[f"stats/{feature}/{name}"] = np.asarray(value).tolist()
        self.episodes.append(row)
        self.total_frames += n
        self._roll_video_if_full()
        return row

    def _encode(self, rgb: np.ndarray) -> None:
        if self._video is None:
            path = self.root / VIDEO_PATH.format(video_key=IMAGE_KEY, chunk_index=0, file_index=self._video_file)
            path.parent.mkdir(parents=True, exist_ok=True)
            container = av.open(str(path), "w")
            stream = container.add_stream(self.vcodec, rate=self.fps)
            stream.height, stream.width = self.image_shape[:2]
            stream.pix_fmt = "yuv420p"
            stream.time_base = Fraction(1, self.fps)
            stream.options = {"crf": str(self.crf), "g": str(VIDEO_GOP)}
            self._video, self._video_path = (container, stream), path
        container, stream = self._video
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
        frame.pts = self._video_frames
        for packet in stream.encode(frame):
            container.mux(packet)
        self._video_frames += 1

    def _close_video(self) -> None:
        if self._video is not None:
            container, stream = self._video
            for packet in stream.encode():
                container.mux(packet)
            container.close()
            self._video = None

    def _roll_video_if_full(self) -> None:
        # The encoder buffers its first frames: a short episode may not have created the file yet.
        if self._video is None or not self._video_path.exists():
            return
        if self._video_path.stat().st_size > VIDEO_FILE_MB * 2**20:
            self._close_video()
            self._video_file += 1
            self._video_frames = 0  # timestamps restart in each file

    def _append_data(self, table: pa.Table) -> int:
        if self._data_writer is not None and self._data_bytes > DATA_FILE_MB * 2**20:
            self._data_writer.close()
            self._data_writer, self._data_file, self._data_bytes = None, self._data_file + 1, 0
        if self._data_writer is None:
            path = self.root / DATA_PATH.format(chunk_index=0, file_index=self._data_file)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._data_writer = pq.ParquetWriter(path, table.schema)
        self._data_writer.write_table(table)
        self._data_bytes += table.nbytes
        return self._data_file

    # --- metadata ---------------------------------------------------------------------------

    def finish(self) -> dict:
        """Close the files and write meta/ (info, stats, tasks, episodes); returns info.json."""
        if not self.episodes:
            raise EpisodeExportError("no episode could be exported")
        self._close_video()
        self._data_writer.close()
        meta = self.root / "meta"
        episodes_path = self.root / EPISODES_PATH.format(chunk_index=0, file_index=0)
        episodes_path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(self.episodes), episodes_path)
        tasks = pa.table({"task_index": pa.array(list(self.tasks.values()), pa.int64()),
                          "task": pa.array(list(self.tasks), pa.string())})
        pandas_index = {"index_columns": ["task"], "column_indexes": [], "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": None},
            {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object", "metadata": None}]}
        pq.write_table(tasks.replace_schema_metadata({"pandas": json.dumps(pandas_index)}), meta / "tasks.parquet")
        stats = {feature: merge_stats([s[feature] for s in self.episode_stats]) for feature in self.episode_stats[0]}
        (meta / "stats.json").write_text(json.dumps(
            {f: {k: np.asarray(v).tolist() for k, v in s.items()} for f, s in stats.items()}, indent=2))
        info = self._info()
        (meta / "info.json").write_text(json.dumps(info, indent=2))
        return info

    def _info(self) -> dict:
        height, width, channels = self.image_shape
        names = joint_names()
        scalar = {"shape": [1], "names": None}
        return {
            "codebase_version": CODEBASE_VERSION, "robot_type": self.robot_type,
            "total_episodes": len(self.episodes), "total_frames": self.total_frames, "total_tasks": len(self.tasks),
            "chunks_size": CHUNKS_SIZE, "data_files_size_in_mb": DATA_FILE_MB, "video_files_size_in_mb": VIDEO_FILE_MB,
            "fps": self.fps, "splits": {"train": f"0:{len(self.episodes)}"},
            "data_path": DATA_PATH, "video_path": VIDEO_PATH,
            "features": {
                "observation.state": {"dtype": "float32", "shape": [ACTION_DIM], "names": names},
                "action": {"dtype": "float32", "shape": [ACTION_DIM], "names": names},
                IMAGE_KEY: {"dtype": "video", "shape": [height, width, channels], "names": ["height", "width", "channels"],
                            "info": {"video.height": height, "video.width": width, "video.codec": _codec_name(self.vcodec),
                                     "video.pix_fmt": "yuv420p", "video.is_depth_map": False, "video.fps": self.fps,
                                     "video.channels": channels, "video.g": VIDEO_GOP, "video.crf": self.crf,
                                     "has_audio": False}},
                "mode": {"dtype": "int64", "shape": [1], "names": ["real=0,digital=1,unknown=255"]},
                "timestamp": {"dtype": "float32", **scalar},
                "frame_index": {"dtype": "int64", **scalar},
                "episode_index": {"dtype": "int64", **scalar},
                "index": {"dtype": "int64", **scalar},
                "task_index": {"dtype": "int64", **scalar},
            },
        }


def _vectors(values: np.ndarray) -> pa.FixedSizeListArray:
    flat = pa.array(np.asarray(values, dtype=np.float32).reshape(-1), pa.float32())
    return pa.FixedSizeListArray.from_arrays(flat, values.shape[1])


def _codec_name(vcodec: str) -> str:
    return {"libx264": "h264", "libsvtav1": "av1", "libx265": "hevc"}.get(vcodec, vcodec)


def export(bags: list[Path], out: Path, fps: int, task: str = "teleoperation", vcodec: str = "libx264",
           topics: ExportTopics = ExportTopics(), progress: bool = True) -> tuple[dict, dict[str, str]]:
    """Export every bag that can be; returns (info.json, {bag: reason} for the episodes skipped)."""
    writer = LeRobotDatasetWriter(out, fps, vcodec=vcodec)
    skipped: dict[str, str] = {}
    bar = tqdm(find_bags(bags), desc="episodes", unit="ep", disable=not progress)
    for bag in bar:
        try:
            episode = load_episode(bag, fps, topics)
            writer.add(episode, episode.metadata.get("task") or task)
            bar.set_postfix(frames=writer.total_frames)
        except EpisodeExportError as exc:
            skipped[str(bag)] = str(exc)
            tqdm.write(f"skipped {bag}: {exc}")
    return writer.finish(), skipped


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bags", nargs="+", type=Path, required=True, help="episode bags or directories of them")
    parser.add_argument("--out", type=Path, required=True, help="new dataset directory")
    parser.add_argument("--fps", type=int, default=16)
    parser.add_argument("--task", default="teleoperation", help="task of bags whose metadata names none")
    parser.add_argument("--vcodec", default="libx264", help="libx264 (default), libsvtav1 or libx265")
    args = parser.parse_args(argv)
    try:
        info, skipped = export(args.bags, args.out, args.fps, args.task, args.vcodec)
    except (EpisodeExportError, FileExistsError) as exc:
        sys.exit(f"export failed: {exc}")
    print(f"{info['total_episodes']} episodes, {info['total_frames']} frames at {info['fps']} FPS -> {args.out}"
          + (f"; {len(skipped)} skipped" if skipped else ""))


if __name__ == "__main__":
    main()
