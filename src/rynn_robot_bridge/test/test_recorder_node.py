"""The recorder node in its own process, fed over real DDS by this test; bags checked with rosbags.

Covers the episode services, the metadata (mode from the transient-local
/rynn/mode published before the recorder existed, URDF and checkpoint hashes),
per-topic counts equal to what was sent, and a SIGKILL mid-episode that leaves a
bag the next recorder start recovers up to its last flush.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import Reader

from rynn_common.action_layout import joint_names
from rynn_common.bag_types import make_typestore
from rynn_common.description import default_urdf_path
from rynn_robot_bridge.recording.metadata import SIDECAR_NAME, checkpoint_sha256, file_sha256

pytestmark = pytest.mark.ros

TOPICS = {
    "/camera/camera/color/image_raw": "sensor_msgs/msg/Image",
    "/camera/camera/color/camera_info": "sensor_msgs/msg/CameraInfo",
    "/joint_states": "sensor_msgs/msg/JointState",
    "/rynn/action": "rynn_teleop_msgs/msg/RobotAction",
    "/tf": "tf2_msgs/msg/TFMessage",
    "/rynn/mode": "std_msgs/msg/String",
}
SENT = 40  # per streaming topic and episode
BURST = 10  # messages per topic published before waiting for the recorder (its image queue holds 30)
TIMEOUT = 60.0  # generous: another job shares the two cores


def write_config(tmp_path: Path, flush_period_s: float) -> Path:
    config = tmp_path / "recorder.yaml"
    config.write_text(yaml.safe_dump({
        "output_dir": str(tmp_path / "recordings"), "flush_period_s": flush_period_s, "status_rate_hz": 5.0,
        "topics": [f"{topic} {msgtype}" for topic, msgtype in TOPICS.items()], "latched_topics": ["/rynn/mode"],
    }))
    return config


class Feeder:
    """This test's side of DDS: one publisher per recorded topic, the services, and the recorder's reports."""

    def __init__(self, node, wait_until):
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import TransformStamped
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from rynn_teleop_msgs.msg import RobotAction, TeleopStatus
        from sensor_msgs.msg import CameraInfo, Image, JointState
        from std_msgs.msg import String
        from std_srvs.srv import Trigger
        from tf2_msgs.msg import TFMessage

        from rynn_common.ros_conversions import make_robot_action

        self.node, self.wait_until, self.Trigger = node, wait_until, Trigger
        self.types = {"Image": Image, "CameraInfo": CameraInfo, "JointState": JointState, "String": String,
                      "TFMessage": TFMessage, "TransformStamped": TransformStamped}
        self.make_robot_action = make_robot_action
        reliable = QoSProfile(depth=SENT * 2, reliability=ReliabilityPolicy.RELIABLE)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pubs = {
            "/camera/camera/color/image_raw": node.create_publisher(Image, "/camera/camera/color/image_raw", reliable),
            "/camera/camera/color/camera_info": node.create_publisher(CameraInfo, "/camera/camera/color/camera_info", reliable),
            "/joint_states": node.create_publisher(JointState, "/joint_states", reliable),
            "/rynn/action": node.create_publisher(RobotAction, "/rynn/action", reliable),
            "/tf": node.create_publisher(TFMessage, "/tf", reliable),
        }
        self.mode_pub = node.create_publisher(String, "/rynn/mode", latched)
        self.clients = {name: node.create_client(Trigger, f"/rynn/recorder/{name}") for name in ("start", "stop", "discard")}
        self.diagnostics: dict[str, str] = {}
        self.statuses = []
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        node.create_subscription(TeleopStatus, "/rynn/status", self.statuses.append, 10)
        self.sequence = 0

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            if status.name == "rynn_recorder":
                self.diagnostics = {kv.key: kv.value for kv in status.values}

    def set_mode(self, mode: str) -> None:
        self.mode_pub.publish(self.types["String"](data=mode))

    def wait_for_recorder(self) -> None:
        assert all(c.wait_for_service(timeout_sec=TIMEOUT) for c in self.clients.values()), "recorder services missing"
        assert self.wait_until(lambda: all(p.get_subscription_count() > 0 for p in self.pubs.values()), TIMEOUT,
                               spin=self.node.spin_once), "recorder did not subscribe to every topic"

    def call(self, name: str):
        future = self.clients[name].call_async(self.Trigger.Request())
        assert self.wait_until(future.done, TIMEOUT, spin=self.node.spin_once), f"{name} service did not answer"
        return future.result()

    def publish(self, count: int) -> None:
        """``count`` messages on every streaming topic, interleaved like the live system, in bursts the
        recorder's image queue holds (a burst of 40 overran its 30 frames when the recorder was slow)."""
        t = self.types
        names = joint_names()
        for index in range(count):
            if index and index % BURST == 0:
                self.wait_until_received(self.sequence)
            self.sequence += 1
            stamp = self.node.get_clock().now().to_msg()
            image = t["Image"](height=12, width=16, encoding="rgb8", step=48, data=bytes([self.sequence % 256]) * 576)
            image.header.stamp, image.header.frame_id = stamp, "camera_color_optical_frame"
            info = t["CameraInfo"](height=12, width=16)
            info.header = image.header
            state = t["JointState"](name=names, position=[0.001 * self.sequence] * 54)
            state.header.stamp = stamp
            transform = t["TransformStamped"]()
            transform.header.stamp, transform.header.frame_id, transform.child_frame_id = stamp, "world", "tracker"
            transform.transform.rotation.w = 1.0
            self.pubs["/camera/camera/color/image_raw"].publish(image)
            self.pubs["/camera/camera/color/camera_info"].publish(info)
            self.pubs["/joint_states"].publish(state)
            self.pubs["/rynn/action"].publish(self.make_robot_action(np.full(54, 0.001 * self.sequence), stamp,
                                                                      sequence=self.sequence))
            self.pubs["/tf"].publish(t["TFMessage"](transforms=[transform]))
            self.node.spin_once(0.005)

    def wait_until_received(self, count: int) -> None:
        """The recorder has taken every image sent so far (its diagnostics count since start)."""
        def taken() -> bool:
            return int(self.diagnostics.get("total/camera/camera/color/image_raw.received", 0)) >= count

        assert self.wait_until(taken, TIMEOUT, spin=self.node.spin_once), f"recorder counts: {self.diagnostics}"

    def wait_for_episode_counts(self, expected: dict[str, int]) -> None:
        def reached():
            return all(self.diagnostics.get(f"episode{topic}.written") == str(n) for topic, n in expected.items())

        assert self.wait_until(reached, TIMEOUT, spin=self.node.spin_once), f"recorder counts: {self.diagnostics}"


def read_bag(path: Path) -> tuple[dict[str, int], dict[str, list], dict]:
    store = make_typestore()
    with Reader(path) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        stamps: dict[str, list] = {}
        messages: dict[str, list] = {}
        in_order = []
        for connection, stamp, raw in reader.messages():
            in_order.append(stamp)
            stamps.setdefault(connection.topic, []).append(stamp)
            messages.setdefault(connection.topic, []).append(store.deserialize_cdr(raw, connection.msgtype))
    assert np.all(np.diff(in_order) >= 0), "bag stamps not monotonic across topics"
    from mcap.reader import make_reader

    with open(next(Path(path).glob("*.mcap")), "rb") as stream:  # as written, not as a reader sorts it
        written = [message.log_time for _, _, message in make_reader(stream).iter_messages(log_time_order=False)]
    assert np.all(np.diff(written) >= 0), "messages not written in the order they were received"
    for topic, values in stamps.items():
        assert np.all(np.diff(values) >= 0), f"{topic}: bag stamps not monotonic"
    custom = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]["custom_data"]
    return counts, messages, custom


@pytest.fixture
def feeder(ros_node, repo_conftest):
    return Feeder(ros_node, repo_conftest.wait_until)


def start_recorder(start_process, config: Path, name: str, *params: str):
    args = ["-m", "rynn_robot_bridge.nodes.recorder_node", "--ros-args", "-p", f"config_file:={config}"]
    for param in params:
        args += ["-p", param]
    return start_process(args, name)


def test_episodes_over_dds_record_every_message_with_their_metadata(tmp_path, start_process, feeder, repo_conftest):
    checkpoint = tmp_path / "world_model"
    checkpoint.mkdir()
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    feeder.set_mode("digital")  # before the recorder exists: it must arrive through TRANSIENT_LOCAL
    recorder = start_recorder(start_process, write_config(tmp_path, 0.5), "recorder", "task:=stack cups",
                              "operator_id:=op-7", f"world_model_checkpoint:={checkpoint}")
    feeder.wait_for_recorder()
    assert repo_conftest.wait_until(lambda: feeder.diagnostics.get("mode") == "digital", TIMEOUT,
                                    spin=feeder.node.spin_once), repo_conftest.read_log(recorder)

    started = feeder.call("start")
    assert started.success, started.message
    assert not feeder.call("start").success  # one episode at a time
    feeder.publish(SENT)
    feeder.wait_for_episode_counts({topic: SENT for topic in feeder.pubs})
    stopped = feeder.call("stop")
    assert stopped.success, stopped.message
    episode = Path(started.message)
    summary = json.loads(stopped.message)

    counts, messages, custom = read_bag(episode)
    assert counts == {**{topic: SENT for topic in feeder.pubs}, "/rynn/mode": 1}
    assert [m.sequence for m in messages["/rynn/action"]] == list(range(1, SENT + 1))  # none lost, in order
    assert messages["/rynn/mode"][0].data == "digital"
    assert (custom["mode"], custom["task"], custom["operator_id"]) == ("digital", "stack cups", "op-7")
    assert custom["robot_description_sha256"] == file_sha256(default_urdf_path())
    assert custom["world_model_checkpoint_sha256"] == checkpoint_sha256(checkpoint)
    assert int(custom["start_time_ns"]) > 0 and custom["start_time_utc"].startswith("20")
    for topic in feeder.pubs:
        assert summary["topics"][topic] == {"received": SENT, "written": SENT, "failed": 0, "lost": 0, "dropped": 0}
    assert json.loads((episode / SIDECAR_NAME).read_text())["state"] == "complete"
    assert repo_conftest.wait_until(
        lambda: any(s.source == "rynn_recorder" and s.outputs >= 5 * SENT + 1 and s.dropped_inputs == 0
                    for s in feeder.statuses), TIMEOUT, spin=feeder.node.spin_once)

    # A second episode in "real" mode, discarded while recording: its directory is gone.
    feeder.set_mode("real")
    second = feeder.call("start")
    assert second.success and Path(second.message) != episode
    feeder.publish(5)
    discarded = feeder.call("discard")
    assert discarded.success and Path(second.message).name in discarded.message
    assert not Path(second.message).exists()
    assert not feeder.call("stop").success  # nothing recording any more

    # A third one, stopped, then discarded after the fact.
    third = feeder.call("start")
    assert third.success
    assert feeder.call("stop").success and feeder.call("discard").success
    assert not Path(third.message).exists()
    assert sorted(p.name for p in episode.parent.iterdir()) == [episode.name]


def test_sigkill_mid_episode_leaves_a_bag_recovered_up_to_the_last_flush(tmp_path, start_process, feeder, repo_conftest):
    config = write_config(tmp_path, 0.3)
    feeder.set_mode("real")
    recorder = start_recorder(start_process, config, "recorder", "task:=wipe")
    feeder.wait_for_recorder()
    started = feeder.call("start")
    assert started.success, started.message
    episode = Path(started.message)
    feeder.publish(SENT)
    feeder.wait_for_episode_counts({topic: SENT for topic in feeder.pubs})

    def flushed_everything() -> bool:  # the sidecar is rewritten at every flush
        sidecar = episode / SIDECAR_NAME
        topics = json.loads(sidecar.read_text())["topics"] if sidecar.is_file() else {}
        return all(topics.get(topic, {}).get("written") == SENT for topic in feeder.pubs)

    assert repo_conftest.wait_until(flushed_everything, TIMEOUT), repo_conftest.read_log(recorder)
    recorder.kill()  # SIGKILL: no handler runs, the MCAP file has no summary and there is no metadata.yaml
    recorder.wait(timeout=TIMEOUT)
    assert not (episode / "metadata.yaml").exists()
    with pytest.raises(FileNotFoundError):
        Reader(episode)

    restarted = start_recorder(start_process, config, "recorder_again")
    assert repo_conftest.wait_until(lambda: "recovered episode_0000" in repo_conftest.read_log(restarted), TIMEOUT), \
        repo_conftest.read_log(restarted)  # logged once the recovery is complete
    counts, messages, custom = read_bag(episode)
    assert {topic: counts[topic] for topic in feeder.pubs} == {topic: SENT for topic in feeder.pubs}
    assert [m.sequence for m in messages["/rynn/action"]] == list(range(1, SENT + 1))
    assert (custom["state"], custom["mode"], custom["task"]) == ("recovered", "real", "wipe")
    assert json.loads((episode / SIDECAR_NAME).read_text())["state"] == "recovered"


def test_messages_of_many_topics_are_written_in_reception_order(tmp_path, start_process, feeder, repo_conftest):
    """Bursts on five topics while the recorder takes every 2 ms: a message one topic receives while another
    is being taken must still be written before the newer messages of that take (the MCAP file's own order)."""
    config = write_config(tmp_path, 0.5)
    recorder = start_recorder(start_process, config, "recorder", "take_period_s:=0.002")
    feeder.wait_for_recorder()
    started = feeder.call("start")
    assert started.success, started.message
    rounds = 40
    for _ in range(rounds):
        feeder.publish(BURST)
    feeder.wait_for_episode_counts({topic: rounds * BURST for topic in feeder.pubs})
    stopped = feeder.call("stop")
    assert stopped.success, stopped.message + repo_conftest.read_log(recorder)
    counts, _, _ = read_bag(Path(started.message))  # asserts the written order
    assert counts == {**{topic: rounds * BURST for topic in feeder.pubs}}
