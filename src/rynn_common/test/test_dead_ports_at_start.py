"""Every node process marks the Fast DDS shared-memory ports of dead readers "not ok" as it starts
(rynn_common.node_runner), not only the recorder: a respawned world model gets its killed self's
port too, and the running nodes must not keep writing into the killed one's segment.

Real files in /dev/shm laid out as Fast DDS 2.14 lays a port's header, at port numbers no participant
uses, and a real node process started through ``run_node``.
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
from pathlib import Path

import pytest

from ros_test_tools import read_log, wait_for_log
from rynn_common.fastdds_shm import OPENED_FOR_READING, OPENED_READ_EXCLUSIVE, PORT_OK, ReleasedPorts, port_flags_offset, release_note

pytestmark = pytest.mark.ros

SHM_DIR = Path("/dev/shm")
HEADER_AT = 256  # where Fast DDS 2.14.5 puts the PortNode
SEGMENT_BYTES = 8192

if not SHM_DIR.is_dir():
    pytest.skip("no /dev/shm: Fast DDS shared memory is Linux-only here", allow_module_level=True)

PROBE_NODE = '''
from rclpy.node import Node
from rynn_common.node_runner import run_node

class Probe(Node):
    """Says it is up from its first spin, so after everything the runner logs before spinning (the released ports)."""

    def __init__(self):
        super().__init__("dead_port_probe")
        self.timer = self.create_timer(0.01, self.up)

    def up(self):
        self.timer.cancel()
        self.get_logger().info("probe up")

run_node(Probe)
'''


def make_port(port: int) -> tuple[Path, Path]:
    """A read-exclusive port's segment (marked ok) and its reader lock file, as a killed reader leaves them."""
    segment, lock = SHM_DIR / f"fastrtps_port{port}", SHM_DIR / f"fastrtps_port{port}_el"
    data = bytearray(SEGMENT_BYTES)
    # port_id, num_listeners, healthy_check_timeout_ms, port_wait_timeout_ms, max_buffer_descriptors, waiting_count, flags
    struct.pack_into("<7I", data, HEADER_AT, port, 1, 1000, 333, 512, 0,
                     PORT_OK | OPENED_READ_EXCLUSIVE | OPENED_FOR_READING)
    segment.write_bytes(bytes(data))
    lock.touch()
    return segment, lock


def is_ok(segment: Path, port: int) -> bool:
    data = segment.read_bytes()
    return bool(data[port_flags_offset(data, port)] & PORT_OK)


@pytest.fixture
def ports():
    """Two unused port numbers (this process's pid keeps parallel runs apart) and the files made for them."""
    base = 60000 + 2 * (os.getpid() % 2500)
    made: list[Path] = []
    yield (base, base + 1), made
    for path in made:
        path.unlink(missing_ok=True)


def test_a_node_marks_a_dead_readers_port_and_leaves_a_live_ones_alone(start_process, ports):
    (dead, live), made = ports
    dead_segment, dead_lock = make_port(dead)
    live_segment, live_lock = make_port(live)
    made += [dead_segment, dead_lock, live_segment, live_lock]
    holder = os.open(live_lock, os.O_RDONLY)  # this process is the live port's reader
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        probe = start_process(["-c", PROBE_NODE], "probe")
        assert wait_for_log(probe, "probe up"), read_log(probe)
        log = read_log(probe)
        assert is_ok(dead_segment, dead) is False, log  # marked: senders open the port again
        assert is_ok(live_segment, live) is True, log  # its reader holds the lock: untouched
        marked = re.search(r"marked the shared-memory ports of dead Fast DDS readers \[([\d, ]*)\] not ok", log)
        assert marked and dead in [int(p) for p in marked.group(1).split(",")], log  # other dead ports may be there too
        assert dead_lock.exists() and live_lock.exists()  # the lock files stay: Fast DDS resets such a port itself
    finally:
        os.close(holder)


def test_what_the_node_logs_about_released_ports():
    assert release_note(None) == ("", "")  # another RMW: nothing looked at
    assert release_note(ReleasedPorts()) == ("", "")
    warning, info = release_note(ReleasedPorts(marked=[7411], already_not_ok=[7413], unrecognised=[]))
    assert warning.startswith("marked the shared-memory ports of dead Fast DDS readers [7411] not ok")
    assert info == "shared-memory ports of dead Fast DDS readers: 1 already not ok, 0 left alone (unrecognised header)"
