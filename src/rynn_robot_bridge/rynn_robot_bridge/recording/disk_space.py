"""Recording onto a volume that fills: a space reserve, and a file that never keeps half a write.

An episode claims ``reserve_bytes`` of its volume (a preallocated file in the episode directory)
before it records. When a write to the bag fails because the volume is full, ``GuardedFile``
cuts the file back to where that write began (the bag then holds only complete MCAP records),
gives the reserve back to the volume and tries the write once more. Done, it marks itself
``disk_full``: the recorder then stops the episode, and the reserve's space holds what closing
it writes (the bag's summary and footer, metadata.yaml, the sidecar), so the bag opens in
``mcap`` and rosbags with every message written before the fault. Only when the reserve is too
small does the error reach the recorder; the bag then ends at its last complete record and
``recover.py`` rebuilds it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO, Callable

DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
RESERVE_NAME = ".space_reserve"


def is_disk_full(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS


class SpaceReserve:
    """``size`` bytes of a volume, held by a preallocated file until ``release``."""

    def __init__(self, path: Path, size: int):
        self.path = Path(path)
        self.size = int(size)
        self.held = False

    def claim(self) -> None:
        """``OSError`` (ENOSPC) when the volume cannot give ``size`` bytes."""
        if self.size <= 0:
            return
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.posix_fallocate(descriptor, 0, self.size)
        except OSError:
            os.close(descriptor)
            self.path.unlink(missing_ok=True)
            raise
        os.close(descriptor)
        self.held = True

    def release(self) -> bool:
        """Give the space back; True when there was some to give."""
        held, self.held = self.held, False
        self.path.unlink(missing_ok=True)
        return held


def open_file(path: Path) -> BinaryIO:
    """A new file for writing, unbuffered (every ``write`` reaches the volume or fails)."""
    return open(path, "xb", buffering=0)


class GuardedFile:
    """A write-only file whose failed writes leave nothing behind, releasing ``reserve`` on a full volume.

    ``opener`` makes the underlying file (tests pass one whose writes stall or fail).
    """

    def __init__(self, path: Path, reserve: SpaceReserve | None = None, opener: Callable[[Path], BinaryIO] = open_file):
        self._file = opener(Path(path))
        self.closed = False
        self._position = 0
        self.reserve = reserve
        self.disk_full = False  # a write found the volume full (and, if it returned, succeeded on the reserve)

    def tell(self) -> int:
        return self._position

    def write(self, data) -> int:
        data, start = bytes(data), self._position
        try:
            return self._write_all(data)
        except OSError as error:
            self._cut_back(start)
            if not is_disk_full(error):
                raise
            self.disk_full = True
            if self.reserve is None or not self.reserve.release():
                raise
        try:
            return self._write_all(data)  # once more, on the reserve's space
        except OSError:
            self._cut_back(start)
            raise

    def _write_all(self, data: bytes) -> int:
        view, done = memoryview(data), 0
        while done < len(data):
            written = self._file.write(view[done:])
            if written is None or written <= 0:
                raise OSError(errno.EIO, "the file took no bytes")
            done += written
            self._position += written
        return done

    def _cut_back(self, start: int) -> None:
        """Drop what a failed write left (the file then ends with the last complete write)."""
        self._file.truncate(start)
        self._file.seek(start)
        self._position = start

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._file.close()
