"""One recorded episode bag, resampled onto a fixed frame clock.

Every stream is sampled latest-before each frame time (causal: a frame never
sees a later state or action), on the bag's receive clock, which all topics
share even when their header stamps come from different clocks. Bad messages
(wrong action size, NaN, missing joints, unsupported image encodings) are
skipped and counted per reason; an episode that lacks a needed stream is an
``EpisodeExportError`` naming it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np
import yaml
from rosbags.rosbag2 import Reader

from rynn_common.action_layout import ACTION_DIM, joint_names
from rynn_common.bag_types import make_typestore
from rynn_common.description import CameraIntrinsics
from rynn_common.ros_names import ACTION_TOPIC, CAMERA_INFO_TOPIC, CAMERA_SKELETON_TOPIC, IMAGE_TOPIC, JOINT_STATES_TOPIC, MODE_TOPIC
from rynn_common.skeleton_arrays import bimanual_skeleton_to_arrays
from rynn_robot_bridge.camera_messages import image_to_rgb, intrinsics_from_camera_info
from rynn_robot_bridge.recording.metadata import file_sha256

MODE_CODES = {"real": 0, "digital": 1, "unknown": 255}  # TeleopStatus.MODE_*


class EpisodeExportError(ValueError):
    """An episode that cannot be exported; the message says which bag and why."""


@dataclass(frozen=True)
class ExportTopics:
    image: str = IMAGE_TOPIC
    camera_info: str = CAMERA_INFO_TOPIC
    joint_states: str = JOINT_STATES_TOPIC
    action: str = ACTION_TOPIC
    mode: str = MODE_TOPIC
    skeleton: str = CAMERA_SKELETON_TOPIC


@dataclass
class AlignedEpisode:
    """Frame-aligned arrays of one episode; images are decoded on demand by ``frames()``."""

    bag: Path
    metadata: dict  # metadata.yaml custom_data (empty for a plain ``ros2 bag record`` bag)
    fps: float
    stamp_ns: np.ndarray  # (N,) bag receive time of each frame slot
    state: np.ndarray  # (N, 54) joint positions from /joint_states
    action: np.ndarray  # (N, 54)
    mode: np.ndarray  # (N,) MODE_CODES
    image_shape: tuple[int, int, int]
    image_topic: str
    skipped: Counter = field(default_factory=Counter)
    skeleton_points: np.ndarray | None = None  # (N, 2, 21, 3) camera frame [m]
    skeleton_valid: np.ndarray | None = None  # (N, 2)
    skeleton_elbows: np.ndarray | None = None  # (N, 2, 3) camera frame [m], NaN = unknown
    intrinsics: CameraIntrinsics | None = None
    _image_indices: np.ndarray = field(default=None, repr=False)
    _image_stamps: np.ndarray = field(default=None, repr=False)

    @property
    def length(self) -> int:
        return len(self.stamp_ns)

    @property
    def mode_label(self) -> str:
        """The episode's mode: the recorder's metadata, else the first /rynn/mode value in the bag."""
        if self.metadata.get("mode") in MODE_CODES:
            return self.metadata["mode"]
        first = int(self.mode[0]) if self.length else MODE_CODES["unknown"]
        return {code: label for label, code in MODE_CODES.items()}[first]

    def frames(self) -> Iterator[np.ndarray]:
        """(H, W, 3) uint8 RGB for every frame slot, in order (an image repeats when the camera was slower)."""
        wanted = {stamp: [] for stamp in self._image_stamps[self._image_indices]}
        for slot, stamp in enumerate(self._image_stamps[self._image_indices]):
            wanted[stamp].append(slot)
        store = make_typestore()
        decoded: dict[int, np.ndarray] = {}
        next_slot = 0
        with Reader(self.bag) as reader:
            connections = [c for c in reader.connections if c.topic == self.image_topic]
            for connection, stamp, raw in reader.messages(connections=connections):
                if stamp not in wanted:
                    continue
                rgb = image_to_rgb(store.deserialize_cdr(raw, connection.msgtype))
                for slot in wanted.pop(stamp):
                    decoded[slot] = rgb
                while next_slot in decoded:
                    yield decoded.pop(next_slot)
                    next_slot += 1
        if next_slot != self.length:
            raise EpisodeExportError(f"{self.bag}: {self.length - next_slot} selected images could not be read back")


def _action_vector(msg) -> np.ndarray:
    values = msg.positions if hasattr(msg, "positions") else getattr(msg, "data", None)
    if values is None:
        raise EpisodeExportError(f"{type(msg).__name__} carries no action vector (expected RobotAction.positions)")
    return np.asarray(values, dtype=np.float64)


class _Stream:
    """Receive stamps and values of one topic's accepted messages."""

    def __init__(self):
        self.stamps: list[int] = []
        self.values: list = []

    def add(self, stamp: int, value) -> None:
        self.stamps.append(stamp)
        self.values.append(value)

    def latest_before(self, times: np.ndarray) -> np.ndarray:
        return np.searchsorted(np.asarray(self.stamps, dtype=np.int64), times, side="right") - 1


def bag_sha256(bag: Path) -> str:
    """sha256 of the bag's MCAP file: with the bag's name, how datasets identify their source bag
    (never by the recording machine's path)."""
    files = sorted(Path(bag).glob("*.mcap"))
    if len(files) != 1:
        raise EpisodeExportError(f"{bag}: expected one .mcap file, found {len(files)}")
    return file_sha256(files[0])


def read_metadata(bag: Path) -> dict:
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    return dict(info.get("custom_data") or {})


def find_bags(paths: list[Path]) -> list[Path]:
    """Bag directories given directly or found under the given directories, sorted; crashed ones are an error."""
    bags = []
    for path in map(Path, paths):
        if (path / "metadata.yaml").is_file():
            bags.append(path)
            continue
        if not path.is_dir():
            raise EpisodeExportError(f"{path}: not a bag directory nor a directory of bags")
        crashed = sorted(m.parent for m in path.rglob("*.mcap") if not (m.parent / "metadata.yaml").is_file())
        if crashed:
            raise EpisodeExportError(f"{crashed[0]} has no metadata.yaml (recorder crashed?): run "
                                     f"python -m rynn_robot_bridge.recording.recover {path}")
        bags += sorted(m.parent for m in path.rglob("metadata.yaml"))
    return bags


def load_episode(bag: Path, fps: float, topics: ExportTopics = ExportTopics(), with_skeleton: bool = False) -> AlignedEpisode:
    """Read ``bag`` once (images are only checked, not kept) and resample every stream at ``fps``."""
    bag = Path(bag)
    if not (bag / "metadata.yaml").is_file():
        raise EpisodeExportError(f"{bag}: no metadata.yaml (run python -m rynn_robot_bridge.recording.recover)")
    store = make_typestore()
    names = joint_names()
    skipped: Counter = Counter()
    images, states, actions, modes, skeletons = _Stream(), _Stream(), _Stream(), _Stream(), _Stream()
    image_shape = None
    intrinsics = None
    wanted = {topics.image, topics.joint_states, topics.action, topics.mode, topics.camera_info}
    if with_skeleton:
        wanted.add(topics.skeleton)
    with Reader(bag) as reader:
        present = {c.topic for c in reader.connections}
        needed = [topics.image, topics.joint_states, topics.action] + ([topics.skeleton] if with_skeleton else [])
        missing = [t for t in needed if t not in present]
        if missing:
            raise EpisodeExportError(f"{bag}: missing topic(s) {', '.join(missing)}")
        connections = [c for c in reader.connections if c.topic in wanted]
        for connection, stamp, raw in reader.messages(connections=connections):
            topic = connection.topic
            msg = store.deserialize_cdr(raw, connection.msgtype)
            if topic == topics.image:
                rgb_shape = (msg.height, msg.width, 3)
                try:
                    image_to_rgb(msg)
                except ValueError:
                    skipped[f"image encoding {msg.encoding!r} unsupported or data short"] += 1
                    continue
                if image_shape is not None and rgb_shape != image_shape:
                    skipped[f"image size {msg.width}x{msg.height} differs from {image_shape[1]}x{image_shape[0]}"] += 1
                else:
                    image_shape = rgb_shape
                    images.add(stamp, None)
            elif topic == topics.joint_states:
                state = _joint_positions(msg, names)
                if isinstance(state, str):
                    skipped[state] += 1
                else:
                    states.add(stamp, state)
            elif topic == topics.action:
                action = _action_vector(msg)
                if action.shape != (ACTION_DIM,):
                    skipped[f"action of size {action.size}, expected {ACTION_DIM}"] += 1
                elif not np.isfinite(action).all():
                    skipped["action with NaN/inf"] += 1
                else:
                    actions.add(stamp, action)
            elif topic == topics.mode:
                modes.add(stamp, MODE_CODES.get(str(msg.data), MODE_CODES["unknown"]))
            elif topic == topics.camera_info and intrinsics is None and msg.k[0] > 0:
                intrinsics = intrinsics_from_camera_info(msg)
            elif topic == topics.skeleton:
                try:
                    skeletons.add(stamp, bimanual_skeleton_to_arrays(msg))
                except ValueError as error:
                    skipped[f"skeleton: {error}"] += 1

    streams = {topics.image: images, topics.joint_states: states, topics.action: actions}
    if with_skeleton:
        streams[topics.skeleton] = skeletons
    empty = [topic for topic, stream in streams.items() if not stream.stamps]
    if empty:
        reasons = "; ".join(f"{n}x {reason}" for reason, n in skipped.items()) or "no messages"
        raise EpisodeExportError(f"{bag}: no usable messages on {', '.join(empty)} ({reasons})")
    start = max(stream.stamps[0] for stream in streams.values())
    end = min(stream.stamps[-1] for stream in streams.values())
    if end < start:
        raise EpisodeExportError(f"{bag}: the streams {', '.join(streams)} do not overlap in time")
    period_ns = 1e9 / fps
    times = start + np.round(np.arange(int((end - start) // period_ns) + 1) * period_ns).astype(np.int64)

    metadata = read_metadata(bag)
    if modes.stamps:
        mode = np.asarray(modes.values)[np.maximum(modes.latest_before(times), 0)]
    else:
        mode = np.full(len(times), MODE_CODES.get(metadata.get("mode", "unknown"), MODE_CODES["unknown"]))
    episode = AlignedEpisode(
        bag=bag, metadata=metadata, fps=fps, stamp_ns=times,
        state=np.stack(states.values)[states.latest_before(times)],
        action=np.stack(actions.values)[actions.latest_before(times)],
        mode=mode.astype(np.int64), image_shape=image_shape, image_topic=topics.image, skipped=skipped, intrinsics=intrinsics,
        _image_indices=images.latest_before(times), _image_stamps=np.asarray(images.stamps, dtype=np.int64),
    )
    if with_skeleton:
        chosen = skeletons.latest_before(times)
        episode.skeleton_points = np.stack([skeletons.values[i]["joints"] for i in chosen])
        episode.skeleton_valid = np.stack([skeletons.values[i]["valid"] for i in chosen])
        episode.skeleton_elbows = np.stack([skeletons.values[i]["elbows"] for i in chosen])
    return episode


def _joint_positions(msg, names: list[str]) -> np.ndarray | str:
    """The 54 positions in action-layout order, or the reason the message is skipped."""
    position = np.asarray(msg.position, dtype=np.float64)
    if len(msg.name) == 0:
        if position.shape != (ACTION_DIM,):
            return f"joint_states without names and {position.size} positions"
        ordered = position
    else:
        index = {name: i for i, name in enumerate(msg.name)}
        absent = [n for n in names if n not in index]
        if absent or len(position) != len(msg.name):
            return "joint_states missing joints" if absent else "joint_states names/positions length mismatch"
        ordered = position[[index[n] for n in names]]
    if not np.isfinite(ordered).all():
        return "joint_states with NaN/inf"
    return ordered
