"""The project's own paired robot episodes (written by rynn_world.episodes.generate or the
recorder), as training clips.

On-disk layout::

    <root>/index.json                      {"episodes": [{"task", "episode", "bag", "frames_file",
                                              "fps", "frames", "image_width", "image_height", ...}]}
    <root>/<task>/episode_NNNN/bag/        rosbag2 MCAP with the recorder's topics:
                                           /camera/camera/color/image_raw (rgb8), .../camera_info,
                                           /rynn/operator/skeleton_camera (BimanualSkeleton with elbows,
                                           camera frame), /rynn/action (RobotAction, 54-D), /joint_states
                                           (+ /rynn/reference_image, /rynn/episode)
    <root>/<task>/episode_NNNN/frames.npz  frame-aligned: stamp_ns (T,), action (T, 54), joint_position (T, 54),
                                           generated episodes also object_mask (T, H, W) and object_position (T, N, 3)
    <root>/<task>/episode_NNNN/episode.json  the index entry of this episode

RGB frames and skeletons only exist in the bag: every skeleton message is decoded by
``ControlSample.from_message`` and rendered by ``render_control``, the live node's path, so a
training control frame is the frame the node renders from the same message (forearms included).
Actions come from frames.npz when it is there (fast), otherwise from the bag. Each image takes
the newest skeleton and action at or before its stamp.
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from rosbags.highlevel import AnyReader

from rynn_common.bag_types import make_typestore
from rynn_common.ros_names import ACTION_TOPIC, CAMERA_INFO_TOPIC, CAMERA_SKELETON_TOPIC, IMAGE_TOPIC
from rynn_robot_bridge.camera_messages import image_to_rgb, intrinsics_from_camera_info

from ..skeleton import CameraIntrinsics, ControlSample
from .clips import Clip, check_clip_frames, clip_starts, render_skeleton, resample_indices, resize_frames, resize_masks


@dataclass
class EpisodeArrays:
    """One decoded episode at its recorded rate."""

    stamps_s: np.ndarray  # (T,)
    frames: np.ndarray  # (T, H, W, 3) uint8
    joints_camera: np.ndarray  # (T, 2, 21, 3) camera optical frame, metres; NaN = missing joint
    valid: np.ndarray  # (T, 2)
    elbows: np.ndarray  # (T, 2, 3) robot elbows in the camera frame; NaN = unknown
    actions: np.ndarray  # (T, 54)
    intrinsics: CameraIntrinsics


def _newest_at_or_before(stamps: np.ndarray, query: np.ndarray) -> np.ndarray:
    return np.clip(np.searchsorted(stamps, query, side="right") - 1, 0, len(stamps) - 1)


def read_episode(episode_dir: Path) -> EpisodeArrays:
    """Decode one episode directory (bag/ + optional frames.npz)."""
    bag = episode_dir / "bag"
    if not bag.is_dir():
        raise FileNotFoundError(f"{bag} not found: an episode needs its rosbag2 directory")
    npz = episode_dir / "frames.npz"
    topics = {IMAGE_TOPIC: [], CAMERA_INFO_TOPIC: [], CAMERA_SKELETON_TOPIC: []} | ({} if npz.is_file() else {ACTION_TOPIC: []})
    with AnyReader([bag], default_typestore=make_typestore()) as reader:  # for a bag without its message definitions
        connections = [c for c in reader.connections if c.topic in topics]
        for connection, stamp, raw in reader.messages(connections=connections):
            topics[connection.topic].append((stamp, reader.deserialize(raw, connection.msgtype)))
    if not topics[IMAGE_TOPIC] or not topics[CAMERA_INFO_TOPIC]:
        raise ValueError(f"{bag} has no {IMAGE_TOPIC} / {CAMERA_INFO_TOPIC} messages")
    image_stamps = np.array([s for s, _ in topics[IMAGE_TOPIC]], dtype=np.int64)
    frames = np.stack([image_to_rgb(m) for _, m in topics[IMAGE_TOPIC]])
    intrinsics = intrinsics_from_camera_info(topics[CAMERA_INFO_TOPIC][0][1])
    if not topics[CAMERA_SKELETON_TOPIC]:
        raise ValueError(f"{bag} has no {CAMERA_SKELETON_TOPIC} messages")
    skeleton_stamps = np.array([stamp for stamp, _ in topics[CAMERA_SKELETON_TOPIC]], dtype=np.int64)
    samples = [ControlSample.from_message(topics[CAMERA_SKELETON_TOPIC][i][1])
               for i in _newest_at_or_before(skeleton_stamps, image_stamps)]
    if npz.is_file():
        actions = np.load(npz)["action"]
        if len(actions) != len(frames):
            raise ValueError(f"{npz} has {len(actions)} frames but the bag has {len(frames)} images")
    elif topics.get(ACTION_TOPIC):
        action_stamps = np.array([stamp for stamp, _ in topics[ACTION_TOPIC]], dtype=np.int64)
        actions = np.stack([np.asarray(topics[ACTION_TOPIC][i][1].positions)
                            for i in _newest_at_or_before(action_stamps, image_stamps)])
    else:
        raise ValueError(f"{bag}: no frames.npz and no {ACTION_TOPIC} messages")
    return EpisodeArrays(image_stamps * 1e-9, frames, np.stack([s.joints for s in samples]),
                         np.stack([s.valid for s in samples]), np.stack([s.elbows for s in samples]),
                         np.asarray(actions, dtype=np.float32), intrinsics)


class EpisodeAtModelRate(NamedTuple):
    """One episode resampled to the model's frame rate and size."""

    frames: np.ndarray  # (T, H, W, 3) uint8
    skeleton: np.ndarray  # (T, H, W, 3) uint8 control renders
    actions: np.ndarray  # (T, 54)
    object_mask: np.ndarray | None  # (T, H, W) uint8 task-object labels (generated episodes)
    object_position: np.ndarray | None  # (T, N, 3)


class RobotEpisodeDataset:
    """Clips of `clip_frames` frames from indexed episodes, at `fps` and height x width.

    episodes / exclude_episodes select by episode number (the same numbers in every task), which
    is how train and held-out splits are made.
    """

    def __init__(self, root, clip_frames: int, height: int, width: int, fps: float = 16.0, stride: int | None = None,
                 tasks: list[str] | None = None, episodes: list[int] | None = None,
                 exclude_episodes: list[int] | None = None, max_cached_episodes: int = 64):
        self.root = Path(root)
        index = self.root / "index.json"
        if not index.is_file():
            raise FileNotFoundError(f"{index} not found: generate episodes first (python -m rynn_world.episodes.generate)")
        self.clip_frames = check_clip_frames(clip_frames)
        self.height, self.width, self.fps = height, width, fps
        self.stride = stride or clip_frames - 1
        entries = json.loads(index.read_text())["episodes"]
        self.entries = [e for e in entries
                        if (tasks is None or e["task"] in tasks)
                        and (episodes is None or e["episode"] in episodes)
                        and (exclude_episodes is None or e["episode"] not in exclude_episodes)]
        if not self.entries:
            raise ValueError(f"no episodes in {index} match tasks={tasks} episodes={episodes} exclude={exclude_episodes}")
        self._cache: dict[int, tuple] = {}
        self._max_cached = max_cached_episodes
        self.items = []
        for i, entry in enumerate(self.entries):
            frames_at_fps = int(np.floor(entry["frames"] * fps / entry["fps"] + 1e-6))
            self.items += [(i, start) for start in clip_starts(frames_at_fps, self.clip_frames, self.stride)]

    def __len__(self) -> int:
        return len(self.items)

    def episode(self, entry_index: int) -> EpisodeAtModelRate:
        """One episode at the model rate and size (cached)."""
        if entry_index not in self._cache:
            if len(self._cache) >= self._max_cached:
                self._cache.pop(next(iter(self._cache)))
            entry = self.entries[entry_index]
            ep = read_episode(self.root / Path(entry["bag"]).parent)
            # Episodes written on their own frame clock (generated, exported) at this rate are taken frame
            # by frame: their stamps sit on the 200 Hz command grid (up to 5 ms after each 1/16 s tick),
            # so resampling them again picked every other frame twice.
            pick = np.arange(len(ep.stamps_s)) if entry["fps"] == self.fps else resample_indices(ep.stamps_s, self.fps)
            frames = resize_frames(ep.frames[pick], self.height, self.width)
            skeleton = render_skeleton(ep.joints_camera[pick], ep.valid[pick], ep.intrinsics, self.height, self.width,
                                       ep.elbows[pick])
            masks, positions = read_object_masks(self.root / Path(entry["bag"]).parent, len(ep.stamps_s))
            if masks is not None:
                masks, positions = resize_masks(masks[pick], self.height, self.width), positions[pick]
            self._cache[entry_index] = EpisodeAtModelRate(frames, skeleton, ep.actions[pick], masks, positions)
        return self._cache[entry_index]

    def __getitem__(self, index: int) -> Clip:
        entry_index, start = self.items[index]
        frames, skeleton, actions, masks, positions = self.episode(entry_index)
        window = slice(start, start + self.clip_frames)
        entry = self.entries[entry_index]
        return Clip(reference=frames[start].copy(), frames=frames[window].copy(), skeleton=skeleton[window].copy(),
                    actions=actions[window].copy(), task=entry["task"],
                    source_id=f"{entry['task']}/episode_{entry['episode']:04d}@{start}",
                    object_mask=None if masks is None else masks[window].copy(),
                    object_position=None if positions is None else positions[window].copy())


def read_object_masks(episode_dir: Path, frames: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The generator's per-frame task-object segmentation and positions (frames.npz), or (None, None)
    for episodes without them (recorded sessions, older generated data)."""
    npz = episode_dir / "frames.npz"
    if not npz.is_file():
        return None, None
    with np.load(npz) as arrays:
        if "object_mask" not in arrays:
            return None, None
        masks, positions = arrays["object_mask"].astype(np.uint8, copy=False), arrays["object_position"]
    if len(masks) != frames or len(positions) != frames:
        raise ValueError(f"{npz} has {len(masks)} object masks for {frames} frames")
    return masks, positions
