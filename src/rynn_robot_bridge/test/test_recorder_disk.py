"""Issue 34: the recorder core when its volume fills (a real tmpfs this test mounts) and when its disk
stalls (an injected file whose writes wait): the episode stops cleanly with every message written
before the fault readable by ``mcap`` and rosbags, a new episode starts once there is room, and a
stalled disk never blocks ``offer``: the queue stays bounded and its drops are counted."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from mcap.reader import make_reader
from rosbags.rosbag2 import Reader

from rynn_robot_bridge.recording.disk_space import RESERVE_NAME, open_file
from rynn_robot_bridge.recording.recorder import DISK_FULL_STATE, MIB, EpisodeRecorder, RecorderBusy
from rynn_robot_bridge.recording.settings import RecorderSettings

IMAGE = "sensor_msgs/msg/Image"
ACTION = "rynn_teleop_msgs/msg/RobotAction"
TOPIC = "/camera/camera/color/image_raw"


def image_bytes(recorder: EpisodeRecorder, sequence: int, width: int = 320, height: int = 240) -> bytes:
    types = recorder.typestore.types
    stamp = types["builtin_interfaces/msg/Time"](sec=sequence, nanosec=0)
    header = types["std_msgs/msg/Header"](stamp=stamp, frame_id="camera_color_optical_frame")
    data = np.full(width * height * 3, sequence % 256, np.uint8)
    msg = types[IMAGE](header=header, height=height, width=width, encoding="rgb8", is_bigendian=0, step=width * 3,
                       data=data)
    return recorder.typestore.serialize_cdr(msg, IMAGE)


def bag_sequences(recorder: EpisodeRecorder, bag: Path) -> tuple[list[int], list[int]]:
    """The image stamps (= sequence numbers) read back by the mcap library and by rosbags."""
    with (bag / f"{bag.name}.mcap").open("rb") as stream:
        by_mcap = [recorder.typestore.deserialize_cdr(m.data, IMAGE).header.stamp.sec
                   for _, _, m in make_reader(stream).iter_messages()]
    with Reader(bag) as reader:
        by_rosbags = [recorder.typestore.deserialize_cdr(raw, IMAGE).header.stamp.sec for _, _, raw in reader.messages()]
    return by_mcap, by_rosbags


def test_a_full_volume_stops_the_episode_cleanly_and_the_next_one_records_once_there_is_room(small_volume):
    settings = RecorderSettings(str(small_volume / "bags"), disk_reserve_mb=4.0, topics=[f"{TOPIC} {IMAGE}"],
                                latched_topics=[])
    recorder = EpisodeRecorder(settings)
    filler = small_volume / "filler.bin"
    filler.write_bytes(bytes(8 * MIB))  # another user of the volume
    name = recorder.start("fill it", "", 1, 0.0)
    assert (small_volume / "bags" / name / RESERVE_NAME).stat().st_size == 4 * MIB
    sent = 0
    for sent in range(1, 200):  # 230 KB a frame: the 12 MiB left fill in ~55
        recorder.offer(TOPIC, IMAGE, image_bytes(recorder, sent), sent * 1000)
        if sent % 5 == 0:
            recorder.flush_if_due(float(sent))
        assert recorder.drain(30.0)
        if recorder.fault:
            break
    assert recorder.fault and "is full" in recorder.fault, recorder.fault
    assert not recorder.recording and sent < 100, sent

    bag = small_volume / "bags" / name
    summary = recorder.last_fault_summary
    written = summary["topics"][TOPIC]["written"]
    assert summary["state"] == DISK_FULL_STATE and written >= 30, summary
    by_mcap, by_rosbags = bag_sequences(recorder, bag)
    assert by_mcap == by_rosbags == list(range(1, written + 1)), "a message written before the fault is missing"
    assert (bag / "metadata.yaml").is_file() and not (bag / RESERVE_NAME).exists()
    assert recorder.totals.topics[TOPIC].received == sent
    assert recorder.snapshot().fault == recorder.fault

    # No room for another episode's reserve: a clear refusal, nothing half-made.
    with pytest.raises(OSError, match="no room"):
        recorder.start("again", "", 2, 1.0)
    assert sorted(p.name for p in (small_volume / "bags").iterdir()) == [name]
    # Room again (the other user's file gone): the next episode records, without a new recorder.
    filler.unlink()
    second = recorder.start("again", "", 2, 1.0)
    assert recorder.fault is None
    for sequence in range(1, 11):
        recorder.offer(TOPIC, IMAGE, image_bytes(recorder, sequence), sequence)
    summary = recorder.stop(timeout=30.0)
    assert summary["state"] == "complete" and summary["topics"][TOPIC]["written"] == 10
    assert bag_sequences(recorder, small_volume / "bags" / second) == (list(range(1, 11)), list(range(1, 11)))
    recorder.close()


class StallingFile:
    """A real file whose writes wait while ``stalled`` is clear (a disk that does not take writes)."""

    def __init__(self, path: Path, running: threading.Event):
        self._file, self._running = open_file(path), running

    def write(self, data) -> int:
        self._running.wait()
        return self._file.write(data)

    def __getattr__(self, name):
        return getattr(self._file, name)


def test_a_stalled_disk_never_blocks_offer_the_queue_is_bounded_and_drops_are_counted(tmp_path):
    running = threading.Event()
    running.set()
    settings = RecorderSettings(str(tmp_path / "bags"), topics=[f"{TOPIC} {IMAGE}"], latched_topics=[],
                                queue_max_mb=2.0, queue_max_messages=1000)
    recorder = EpisodeRecorder(settings, opener=lambda path: StallingFile(path, running))
    name = recorder.start("slow disk", "", 1, 0.0)
    frame = image_bytes(recorder, 0)  # 230 KB: the 2 MiB queue holds 9 of them

    running.clear()  # the disk stops taking writes
    recorder.flush_if_due(10.0)
    deadline = time.monotonic() + 30.0
    while recorder.queued != (0, 0) and time.monotonic() < deadline:  # the writer thread took the flush: it waits
        time.sleep(0.01)
    slowest = 0.0
    for sequence in range(1, 101):
        started = time.perf_counter()
        recorder.offer(TOPIC, IMAGE, frame, sequence)
        slowest = max(slowest, time.perf_counter() - started)
    messages, queued_bytes = recorder.queued
    counts = recorder.snapshot().episode_counts[TOPIC]
    assert slowest < 0.05, f"offer waited {slowest * 1e3:.0f} ms for the disk"
    assert messages * len(frame) == queued_bytes <= 2 * MIB < queued_bytes + len(frame), (messages, queued_bytes)
    assert counts.received == 100 and counts.dropped == 100 - messages and counts.written == 0, counts

    # A stop on the stalled disk answers at once (busy), and still happens once the disk moves.
    started = time.perf_counter()
    with pytest.raises(RecorderBusy, match="slow disk"):
        recorder.stop(timeout=0.3)
    assert time.perf_counter() - started < 2.0
    assert not recorder.recording
    recorder.offer(TOPIC, IMAGE, frame, 101)  # after the stop: idle, not in the bag
    running.set()
    assert recorder.drain(30.0)
    bag = tmp_path / "bags" / name
    assert (bag / "metadata.yaml").is_file()
    by_mcap, by_rosbags = bag_sequences(recorder, bag)
    assert len(by_mcap) == len(by_rosbags) == messages
    totals = recorder.totals.topics[TOPIC]
    assert (totals.received, totals.written, totals.dropped, recorder.totals.idle) == (101, messages, 100 - messages, 1)
    recorder.close()
