"""Recorded operator sessions: JSON-lines, one header line then one frame per line.

    {"format": "rynn_operator_session", "version": 1, "meta": {...}}
    {"stamp": ..., "trackers": {...}, "hands": {...}}      # see operator.codec
    ...

Line-oriented so a crashed recording keeps every frame written before the crash.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Iterable, Iterator

from rynn_retarget.operator.codec import frame_from_dict, frame_to_dict
from rynn_retarget.operator.frame import OperatorFrame

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
    """(meta, frames) of a session file; ``ValueError`` names the bad line."""
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
