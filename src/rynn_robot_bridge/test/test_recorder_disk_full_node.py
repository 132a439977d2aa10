"""Issue 34: the recorder node in its own process records onto a small tmpfs this test mounts, fed
camera frames over real DDS until the volume is full.

The episode stops by itself; /rynn/status and /diagnostics carry a ``disk_full`` fault; the node
keeps running and answering its services; the bag holds, readable by ``mcap`` and rosbags, every
frame counted as written; once the volume has room again a new episode records without a restart
and the fault clears. Before: the write error was raised from the subscription, the episode stayed
"recording" with every later write failing, and stopping it raised from the close.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from mcap.reader import make_reader
from rosbags.rosbag2 import Reader

from rynn_common.bag_types import make_typestore

pytestmark = pytest.mark.ros

IMAGE_TOPIC = "/camera/camera/color/image_raw"
TIMEOUT = 60.0
MIB = 1 << 20


def image_stamps(bag: Path) -> tuple[list[int], list[int]]:
    store = make_typestore()
    with (bag / f"{bag.name}.mcap").open("rb") as stream:
        by_mcap = [store.deserialize_cdr(m.data, "sensor_msgs/msg/Image").header.stamp.sec
                   for _, c, m in make_reader(stream).iter_messages() if c.topic == IMAGE_TOPIC]
    with Reader(bag) as reader:
        by_rosbags = [store.deserialize_cdr(raw, c.msgtype).header.stamp.sec
                      for c, _, raw in reader.messages() if c.topic == IMAGE_TOPIC]
    return by_mcap, by_rosbags


def test_a_full_volume_stops_the_episode_with_a_fault_and_the_next_one_records_without_a_restart(
        tmp_path, small_volume, start_process, ros_node, repo_conftest):
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rynn_teleop_msgs.msg import TeleopStatus
    from sensor_msgs.msg import Image
    from std_srvs.srv import Trigger

    wait_until, read_log = repo_conftest.wait_until, repo_conftest.read_log
    config = tmp_path / "recorder.yaml"
    config.write_text(yaml.safe_dump({
        "output_dir": str(small_volume / "bags"), "flush_period_s": 0.5, "status_rate_hz": 5.0, "disk_reserve_mb": 4.0,
        "topics": [f"{IMAGE_TOPIC} sensor_msgs/msg/Image"], "latched_topics": [],
    }))
    filler = small_volume / "filler.bin"
    filler.write_bytes(bytes(8 * MIB))
    recorder = start_process(["-m", "rynn_robot_bridge.nodes.recorder_node", "--ros-args", "-p", f"config_file:={config}"],
                             "recorder")

    faults: list[str] = []
    diagnostics: dict[str, object] = {}
    ros_node.create_subscription(TeleopStatus, "/rynn/status",
                                 lambda m: m.source == "rynn_recorder" and faults.__setitem__(slice(None), list(m.faults)), 10)

    def on_diagnostics(msg) -> None:
        for status in msg.status:
            if status.name == "rynn_recorder":
                diagnostics.update(level=status.level, message=status.message,
                                   values={kv.key: kv.value for kv in status.values})

    ros_node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    images = ros_node.create_publisher(Image, IMAGE_TOPIC, QoSProfile(depth=30, reliability=ReliabilityPolicy.RELIABLE))
    clients = {name: ros_node.create_client(Trigger, f"/rynn/recorder/{name}") for name in ("start", "stop")}
    assert all(c.wait_for_service(timeout_sec=TIMEOUT) for c in clients.values()), read_log(recorder)
    assert wait_until(lambda: images.get_subscription_count() > 0, TIMEOUT, spin=ros_node.spin_once)

    def call(name: str):
        future = clients[name].call_async(Trigger.Request())
        assert wait_until(future.done, TIMEOUT, spin=ros_node.spin_once), f"{name} did not answer\n{read_log(recorder)}"
        return future.result()

    sent = [0]

    def publish(count: int) -> None:
        for _ in range(count):
            sent[0] += 1
            image = Image(height=240, width=320, encoding="rgb8", step=960, data=bytes([sent[0] % 256]) * 230400)
            image.header.stamp.sec, image.header.frame_id = sent[0], "camera_color_optical_frame"
            images.publish(image)
            ros_node.spin_once(0.02)

    started = call("start")
    assert started.success, started.message
    episode = Path(started.message)

    # 230 KB frames into the 12 MiB left: the volume fills after ~40 of them.
    def full() -> bool:
        publish(5)
        return any("disk_full" in f for f in faults)

    assert wait_until(full, TIMEOUT, spin=ros_node.spin_once), (faults, read_log(recorder)[-3000:])
    assert wait_until(lambda: diagnostics.get("values", {}).get("recording") == "" and "is full" in str(
        diagnostics.get("message")), TIMEOUT, spin=ros_node.spin_once), diagnostics
    assert diagnostics["level"] in (b"\x02", 2), diagnostics  # ERROR
    assert recorder.poll() is None, read_log(recorder)
    assert "is full" in read_log(recorder)
    refused = call("stop")
    assert not refused.success and "nothing to stop" in refused.message

    summary = yaml.safe_load((episode / "metadata.yaml").read_text())["rosbag2_bagfile_information"]["custom_data"]
    written = int(__import__("json").loads(summary["topic_counts"])[IMAGE_TOPIC]["written"])
    assert summary["state"] == "stopped_disk_full" and written >= 20, summary
    by_mcap, by_rosbags = image_stamps(episode)
    assert by_mcap == by_rosbags and len(by_mcap) == written, (len(by_mcap), len(by_rosbags), written)
    assert np.all(np.diff(by_mcap) > 0)

    # Room again: a new episode records, and the fault is gone.
    filler.unlink()
    again = call("start")
    assert again.success, again.message
    assert wait_until(lambda: not any("disk_full" in f for f in faults), TIMEOUT, spin=ros_node.spin_once), faults
    first_sent = sent[0] + 1
    publish(10)
    assert wait_until(lambda: diagnostics.get("values", {}).get(f"episode{IMAGE_TOPIC}.written") == "10", TIMEOUT,
                      spin=ros_node.spin_once), diagnostics
    stopped = call("stop")
    assert stopped.success, stopped.message
    assert image_stamps(Path(again.message)) == (list(range(first_sent, first_sent + 10)),) * 2
    assert recorder.poll() is None
