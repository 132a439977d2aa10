"""Recorded operator sessions, replayed as an operator source (``source:=replay replay_path:=...``).

Two forms. A session file, JSON-lines, one header line then one frame per line::

    {"format": "rynn_operator_session", "version": 1, "meta": {...}}
    {"stamp": ..., "trackers": {...}, "hands": {...}}      # see operator.codec
    ...

(line-oriented so a crashed recording keeps every frame written before the crash), or an episode
bag the recorder wrote (a directory with metadata.yaml): the tracker samples on /tf and the glove
hands on /rynn/operator/hands, replayed with their recorded timing, each tracker sample with the
newest glove sample received before it (as the retarget node pairs them live).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Iterable, Iterator

from rynn_common.ros_names import HANDS_TOPIC, TF_TOPIC
from rynn_common.skeleton_arrays import bimanual_skeleton_to_arrays
from rynn_retarget.kinematics.transforms import matrix_from_transform
from rynn_retarget.operator.codec import frame_from_dict, frame_to_dict
from rynn_retarget.operator.frame import TRACKER_NAMES, HandSkeleton, OperatorFrame

SESSION_FORMAT = "rynn_operator_session"
SESSION_VERSION = 1


def write_session(path: str | Path, frames: Iterable[OperatorFrame], meta: dict | None = None) -> int:
    """Write ``frames`` to ``path``; returns the number written."""
    count = 0
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(json.dumps({"format": SESSION_FORMAT, "version": SESSION_VERSION, "meta": meta or {}}) + "\n")
        for frame in frames:
            stream.write(json.dumps(frame_to_dict(frame)) + "\n")
            count += 1
    return count


def read_session(path: str | Path) -> tuple[dict, list[OperatorFrame]]:
    """(meta, frames) of a session file or an episode bag; ``ValueError`` names the bad line."""
    if (Path(path) / "metadata.yaml").is_file():
        return read_bag_session(path)
    with open(path, encoding="utf-8") as stream:
        header = json.loads(stream.readline() or "{}")
        if header.get("format") != SESSION_FORMAT:
            raise ValueError(f"{path}: not an operator session (format {header.get('format')!r})")
        if header.get("version") != SESSION_VERSION:
            raise ValueError(f"{path}: session version {header.get('version')} unsupported (need {SESSION_VERSION})")
        frames = []
        for number, line in enumerate(stream, start=2):
            if not line.strip():
                continue
            try:
                frames.append(frame_from_dict(json.loads(line)))
            except ValueError as error:
                raise ValueError(f"{path}:{number}: {error}") from error
    return header.get("meta", {}), frames




def read_bag_session(bag: str | Path, hands_topic: str = HANDS_TOPIC,
                     world_frame: str = "operator_world") -> tuple[dict, list[OperatorFrame]]:
    """(meta, frames) of a recorded episode bag: one frame per tracker sample (all five trackers under
    ``world_frame``, frames ``operator_<tracker>``), stamped with its receive time in the bag."""
    from rosbags.highlevel import AnyReader  # imported here: a session file or a live source needs no rosbags

    from rynn_common.bag_types import make_typestore

    names = {f"operator_{name}": name for name in TRACKER_NAMES}
    frames: list[OperatorFrame] = []
    hands: dict | None = None
    with AnyReader([Path(bag)], default_typestore=make_typestore()) as reader:  # for a bag without its message definitions
        present = {c.topic for c in reader.connections}
        if TF_TOPIC not in present or hands_topic not in present:
            raise ValueError(f"{bag}: an operator replay needs {TF_TOPIC} and {hands_topic} (recorded since the "
                             f"recorder keeps the gloves); found {sorted(present)}")
        connections = [c for c in reader.connections if c.topic in (TF_TOPIC, hands_topic)]
        for connection, stamp_ns, raw in reader.messages(connections=connections):
            msg = reader.deserialize(raw, connection.msgtype)
            if connection.topic == hands_topic:
                hands = bimanual_skeleton_to_arrays(msg)
                continue
            trackers = {names[t.child_frame_id]: matrix_from_transform(t.transform) for t in msg.transforms
                        if t.child_frame_id in names and t.header.frame_id == world_frame}
            if len(trackers) != len(TRACKER_NAMES):
                continue  # robot TF or a partial sample
            frame = OperatorFrame(stamp_ns * 1e-9, trackers)
            if hands is not None:
                frame.left_hand, frame.right_hand = (
                    HandSkeleton(hands["joints"][i], hands["confidence"][i], bool(hands["valid"][i])) for i in range(2))
            frames.append(frame)
    if not frames:
        raise ValueError(f"{bag}: no operator tracker samples under {world_frame!r} on {TF_TOPIC}")
    return {"source_bag": Path(bag).name}, frames


class ReplaySource:
    """``OperatorSource`` replaying a session, optionally paced by its stamps and looped."""

    def __init__(self, path: str | Path, realtime: bool = False, loop: bool = False):
        self.meta, self._frames = read_session(path)
        self.realtime = realtime
        self.loop = loop
        self._closed = False

    def frames(self) -> Iterator[OperatorFrame]:
        if not self._frames:
            return
        span = self._frames[-1].stamp - self._frames[0].stamp
        offset = 0.0
        while not self._closed:
            start_wall = time.monotonic()
            first = self._frames[0].stamp
            for frame in self._frames:
                if self._closed:
                    return
                if self.realtime:
                    delay = start_wall + (frame.stamp - first) - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                yield OperatorFrame(frame.stamp + offset, frame.trackers, frame.left_hand, frame.right_hand)
            if not self.loop:
                return
            # Stamps keep increasing across loops so the input guard does not drop them.
            offset += span + (span / max(len(self._frames) - 1, 1))

    def close(self) -> None:
        self._closed = True
