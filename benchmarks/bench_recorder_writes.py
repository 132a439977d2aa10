"""CPU per recorded message of the recorder core (rynn_robot_bridge.recording.recorder), by ``write_interval_s``.

Feeds an ``EpisodeRecorder`` recording into a real MCAP bag the message mix the default graph records each second
in digital mode (16 camera images of 640x480 with their camera info, 100 joint states, 200 commands, the
operator's /tf and hands at 30 Hz, robot /tf at 20 Hz, 30 camera skeletons), paced on the wall clock as the
subscriptions deliver them, and prints the process CPU (``time.process_time``: this thread's offers, the
writer thread's writes) per message. The write intervals given are measured in turn within each repeat,
side by side: 0 wakes the writer thread for every message (as before ``write_interval_s``).

    .venv/bin/python benchmarks/bench_recorder_writes.py [--seconds 5] [--repeats 3] [--intervals 0,0.05]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_robot_bridge")]


def recorded_second() -> list[tuple[float, str, str, bytes]]:
    """(offset in the second, topic, type, CDR bytes) of one second of the graph's recorded topics."""
    from builtin_interfaces.msg import Time
    from rclpy.serialization import serialize_message
    from rynn_teleop_msgs.msg import BimanualSkeleton, RobotAction
    from sensor_msgs.msg import CameraInfo, Image, JointState
    from tf2_msgs.msg import TFMessage

    from rynn_common.action_layout import joint_names
    from rynn_common.ros_conversions import make_tf_message
    from rynn_common.ros_names import (
        ACTION_TOPIC,
        CAMERA_INFO_TOPIC,
        CAMERA_SKELETON_TOPIC,
        HANDS_TOPIC,
        IMAGE_TOPIC,
        JOINT_STATES_TOPIC,
        TF_TOPIC,
    )

    names = joint_names()
    eye = [[[1.0 if r == c else 0.0 for c in range(4)] for r in range(4)]]
    streams = [
        (IMAGE_TOPIC, "sensor_msgs/msg/Image",
         Image(height=480, width=640, encoding="rgb8", step=1920, data=bytes(640 * 480 * 3)), 16),
        (CAMERA_INFO_TOPIC, "sensor_msgs/msg/CameraInfo", CameraInfo(height=480, width=640), 16),
        (JOINT_STATES_TOPIC, "sensor_msgs/msg/JointState",
         JointState(name=names, position=[0.1] * 54, velocity=[0.0] * 54, effort=[0.0] * 54), 100),
        (ACTION_TOPIC, "rynn_teleop_msgs/msg/RobotAction", RobotAction(), 200),
        (TF_TOPIC, "tf2_msgs/msg/TFMessage", make_tf_message([("operator_world", f"operator_{i}") for i in range(5)],
                                                         eye * 5, Time()), 30),
        (TF_TOPIC, "tf2_msgs/msg/TFMessage", TFMessage(), 20),
        (HANDS_TOPIC, "rynn_teleop_msgs/msg/BimanualSkeleton", BimanualSkeleton(), 30),
        (CAMERA_SKELETON_TOPIC, "rynn_teleop_msgs/msg/BimanualSkeleton", BimanualSkeleton(), 30),
    ]
    return sorted((k / rate, topic, msgtype, serialize_message(msg))
                  for topic, msgtype, msg, rate in streams for k in range(rate))


def measure(interval: float, second: list, seconds: int) -> tuple[int, float]:
    from rynn_robot_bridge.recording.recorder import EpisodeRecorder
    from rynn_robot_bridge.recording.settings import RecorderSettings

    with tempfile.TemporaryDirectory() as directory:
        recorder = EpisodeRecorder(RecorderSettings(output_dir=directory, write_interval_s=interval))
        recorder.start("bench", "", time.time_ns(), time.monotonic())
        offered, cpu_start, wall_start = 0, time.process_time(), time.monotonic()
        for index in range(seconds):
            for offset, topic, msgtype, raw in second:
                delay = wall_start + index + offset - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                recorder.offer(topic, msgtype, raw, time.time_ns())
                offered += 1
            recorder.flush_if_due(time.monotonic())
        summary = recorder.stop(timeout=30.0)
        cpu = time.process_time() - cpu_start
        recorder.close()
    assert summary["messages_written"] == offered, summary
    return offered, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--intervals", default="0,0.05", help="comma-separated write_interval_s, measured in turn")
    options = parser.parse_args()
    second = recorded_second()
    print(f"{len(second)} messages a second, {options.seconds} s per run; {os.cpu_count()} cores, "
          f"load avg {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for repeat in range(options.repeats):
        figures = []
        for interval in (float(value) for value in options.intervals.split(",")):
            offered, cpu = measure(interval, second, options.seconds)
            figures.append(f"write_interval_s {interval:g}: {1e6 * cpu / offered:6.1f} us")
        print(f"repeat {repeat}: " + ", ".join(figures) + " of CPU per recorded message", flush=True)


if __name__ == "__main__":
    main()
