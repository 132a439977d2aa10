"""Fast DDS shared-memory ports left by a killed process: marked "not ok" before this process creates its participant.

Why: a Fast DDS participant reads its unicast traffic from its own shared-memory port, a segment
``/dev/shm/fastrtps_port<N>`` that it holds with a kernel ``flock`` on ``fastrtps_port<N>_el``.
Every process that sends to it (publishers, service clients) maps that segment once and keeps it.
When the reader dies by SIGKILL, the segment stays marked ok. The senders' port watchdogs mark it
"not ok" (and then open the port again) only when the dead reader was waiting for data or
processing a message; a reader killed in between, or while its participant was starting, leaves
a port nobody ever marks. A restarted process that gets the same port number (the same
participant index, the usual case for a respawned node) finds the lock file free, calls the port
a zombie and replaces the segment with a new one, without marking the old one. The senders keep
writing into the old, unlinked segment: the restarted node is discovered, but no request or
message from an already running process reaches it, for as long as those processes live.
Seen as the soak's respawned recorder that never answered ``/rynn/recorder/start`` again
(docs/reliability.md, Soak; reproduced with the recorder alone, the senders mapping
``fastrtps_port<N> (deleted)``).

Every Rynn node process calls it at start (``rynn_common.node_runner``, through
``release_before_participant``), so any node the graph respawns (the recorder, the world model) is
heard again. ``release_dead_ports()`` does, before the participant exists, what Fast DDS does itself to a
port it finds unhealthy: for each reader lock file whose ``flock`` is free (its holder died), it
clears the port's "ok" flag while holding that lock. Senders then see "port not ok" on their next
write and open the port again, which reaches the segment the restarted reader creates.
A port is changed only when its header matches the layout of Fast DDS 2.14 (``PortNode``: the
port number the file is named after, the health-check timeout and a third of it, the flags of a
port opened read-exclusive); anything else is left alone and reported.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from rynn_common.dds_profile import uses_fast_dds

SHM_DIR = Path("/dev/shm")
PORT_SEGMENT = re.compile(r"^fastrtps_port(\d+)$")
READER_LOCK_SUFFIX = "_el"  # the exclusive reader's flock file (Fast DDS RobustExclusiveLock)
HEADER_SEARCH_BYTES = 4096  # PortNode is the segment's first named object (offset 256 with Fast DDS 2.14.5)

# PortNode fields from port_id on, 4-byte words: port_id, num_listeners, healthy_check_timeout_ms,
# port_wait_timeout_ms (= healthy_check_timeout_ms / 3), max_buffer_descriptors, waiting_count, flags.
FLAGS_WORD = 6
PORT_OK = 0x1
OPENED_READ_EXCLUSIVE = 0x2
OPENED_FOR_READING = 0x4
KNOWN_FLAGS = PORT_OK | OPENED_READ_EXCLUSIVE | OPENED_FOR_READING


@dataclass
class ReleasedPorts:
    """What ``release_dead_ports`` found: ports marked not ok now, and dead readers' ports left as they were."""

    marked: list[int] = field(default_factory=list)  # were ok: senders reopen them on their next write
    already_not_ok: list[int] = field(default_factory=list)  # a sender's watchdog had marked them
    unrecognised: list[int] = field(default_factory=list)  # header not as expected: left alone


def port_flags_offset(segment: bytes | mmap.mmap, port: int) -> int | None:
    """The byte offset of the PortNode flags word of ``port`` in its segment, or None when no
    unique header of a read-exclusive port with that number is found."""
    found = []
    limit = min(HEADER_SEARCH_BYTES, len(segment) - 4 * (FLAGS_WORD + 1))
    for offset in range(0, limit, 4):
        words = struct.unpack_from(f"<{FLAGS_WORD + 1}I", segment, offset)
        if words[0] != port:
            continue
        healthy_ms, wait_ms, flags = words[2], words[3], words[FLAGS_WORD]
        if healthy_ms and wait_ms == healthy_ms // 3 and not flags & ~KNOWN_FLAGS and flags & OPENED_READ_EXCLUSIVE:
            found.append(offset + 4 * FLAGS_WORD)
    return found[0] if len(found) == 1 else None


def _mark_not_ok(segment_path: Path, port: int) -> str:
    """Under the dead reader's lock: clear the port's ok flag. Returns 'marked', 'already_not_ok' or 'unrecognised'."""
    with segment_path.open("r+b") as file:
        size = os.fstat(file.fileno()).st_size
        if size < HEADER_SEARCH_BYTES:
            return "unrecognised"
        with mmap.mmap(file.fileno(), size) as segment:
            flags_at = port_flags_offset(segment, port)
            if flags_at is None:
                return "unrecognised"
            if not segment[flags_at] & PORT_OK:
                return "already_not_ok"
            segment[flags_at] = segment[flags_at] & ~PORT_OK & 0xFF  # one byte: the bit Fast DDS clears
            return "marked"


def release_dead_ports(shm_dir: Path = SHM_DIR) -> ReleasedPorts:
    """Mark every Fast DDS port whose exclusive reader died "not ok" (see the module doc). Call it
    before this process creates its participant. Ports of live readers, ports without a reader lock
    file, and files this process may not open are left alone."""
    released = ReleasedPorts()
    try:
        names = sorted(os.listdir(shm_dir))
    except OSError:
        return released
    for name in names:
        match = PORT_SEGMENT.match(name)
        if match is None or name + READER_LOCK_SUFFIX not in names:
            continue
        port, lock_path = int(match.group(1)), shm_dir / (name + READER_LOCK_SUFFIX)
        try:
            lock = os.open(lock_path, os.O_RDONLY)
        except OSError:
            continue  # gone meanwhile (its reader closed it cleanly), or not ours to open
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its reader is alive
            # Still the lock file at that name: while this lock is held no one can make a new
            # read-exclusive segment there, so a read-exclusive header found now is the dead reader's.
            if os.fstat(lock).st_ino != os.stat(lock_path).st_ino:
                continue
            outcome = _mark_not_ok(shm_dir / name, port)
        except OSError:
            continue
        finally:
            os.close(lock)  # releases the flock; the lock file stays, so Fast DDS resets the port as a zombie
        getattr(released, outcome).append(port)
    return released


def release_before_participant(environ=os.environ) -> ReleasedPorts | None:
    """``release_dead_ports()`` when this process will use Fast DDS (None for other RMWs)."""
    return release_dead_ports() if uses_fast_dds(environ) else None


def release_note(released: ReleasedPorts | None) -> tuple[str, str]:
    """(warning, info) lines for the node's log; "" where there is nothing to say."""
    if released is None:
        return "", ""
    warning = (f"marked the shared-memory ports of dead Fast DDS readers {released.marked} not ok: the running nodes "
               "open them again (a killed node's, respawned)") if released.marked else ""
    info = (f"shared-memory ports of dead Fast DDS readers: {len(released.already_not_ok)} already not ok, "
            f"{len(released.unrecognised)} left alone (unrecognised header)"
            if released.already_not_ok or released.unrecognised else "")
    return warning, info
