"""The ROS-free recorder core on real MCAP files: episodes, counters, latched replay, crash recovery."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from mcap.reader import make_reader
from rosbags.rosbag2 import Reader

from rynn_common.bag_types import make_typestore
from rynn_common.description import default_urdf_path
from rynn_robot_bridge.recording.metadata import SIDECAR_NAME, EpisodeSetup, checkpoint_sha256, file_sha256, portable_name
from rynn_robot_bridge.recording.recorder import EpisodeRecorder, RecorderError, RecorderSettings
from rynn_robot_bridge.recording.recover import MCAP_MAGIC, find_incomplete, recover_episode
from rynn_robot_bridge.recording.recover import main as recover_main
from rynn_robot_bridge.recording.rosbag2_mcap import INFINITE_NS, LATCHED_QOS, OfferedQos
from rynn_robot_bridge.recording.settings import load_recorder_settings, parse_topic

ACTION = "rynn_teleop_msgs/msg/RobotAction"
STRING = "std_msgs/msg/String"


def serialized_action(recorder: EpisodeRecorder, value: float, sequence: int) -> bytes:
    types = recorder.typestore.types
    header = types["std_msgs/msg/Header"](stamp=types["builtin_interfaces/msg/Time"](sec=0, nanosec=0), frame_id="base_link")
    msg = types[ACTION](header=header, positions=np.full(54, value), sequence=sequence)
    return recorder.typestore.serialize_cdr(msg, ACTION)


def serialized_mode(recorder: EpisodeRecorder, mode: str) -> bytes:
    return recorder.typestore.serialize_cdr(recorder.typestore.types[STRING](data=mode), STRING)


@pytest.fixture
def recorder(tmp_path):
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "weights.bin").write_bytes(b"\x01\x02")
    return EpisodeRecorder(RecorderSettings(tmp_path / "out", world_model_checkpoint=str(checkpoint)))


def snapshot(live: Path, crashed: Path) -> None:
    """Copy a recording directory while its recorder writes it, as a SIGKILL would leave it: a file renamed
    away between the listing and the copy (the writer thread's atomic ``*.tmp`` -> final) is simply absent."""
    def copy_if_still_there(source, target):
        try:
            return shutil.copy2(source, target)
        except FileNotFoundError:
            return target
    shutil.copytree(live, crashed, copy_function=copy_if_still_there)


def test_an_episode_started_before_the_mode_arrived_takes_the_first_mode_seen(recorder):
    recorder.start("wipe", "", 1_000, 0.0)  # /rynn/mode (transient local) not delivered yet
    recorder.offer("/rynn/mode", STRING, serialized_mode(recorder, "real"), 1_500)
    recorder.offer("/rynn/mode", STRING, serialized_mode(recorder, "digital"), 1_600)
    summary = recorder.stop()
    assert (summary["mode"], summary["modes_seen"]) == ("real", ["real", "digital"])


def test_episode_bag_holds_latched_mode_counts_and_setup(recorder, tmp_path):
    recorder.offer("/rynn/mode", STRING, serialized_mode(recorder, "digital"), 5)  # long before the episode
    recorder.offer("/rynn/action", ACTION, serialized_action(recorder, 0.0, 0), 6)  # idle: not in any bag
    name = recorder.start("stack cups", "op-3", 1_000, 0.0)
    for i in range(10):
        recorder.offer("/rynn/action", ACTION, serialized_action(recorder, i * 0.1, i), 2_000 + i)
    recorder.offer("/rynn/mode", STRING, serialized_mode(recorder, "real"), 3_000)
    summary = recorder.stop()

    bag = tmp_path / "out" / name
    with Reader(bag) as reader:
        assert {c.topic: c.msgcount for c in reader.connections} == {"/rynn/mode": 2, "/rynn/action": 10}
        modes = [recorder.typestore.deserialize_cdr(raw, STRING).data
                 for c, _, raw in reader.messages() if c.topic == "/rynn/mode"]
    assert modes == ["digital", "real"]
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    custom = info["custom_data"]
    assert info["storage_identifier"] == "mcap"
    assert (custom["mode"], custom["task"], custom["operator_id"], custom["modes_seen"]) == (
        "digital", "stack cups", "op-3", "digital,real")
    assert custom["robot_description_sha256"] == file_sha256(default_urdf_path())
    assert custom["world_model_checkpoint_sha256"] == checkpoint_sha256(tmp_path / "checkpoint") != "none"
    assert json.loads(custom["topic_counts"])["/rynn/action"] == {"received": 10, "written": 10, "failed": 0, "lost": 0,
                                                                "dropped": 0}
    assert json.loads((bag / SIDECAR_NAME).read_text()) == summary
    assert recorder.totals.idle == 2 and recorder.totals.topics["/rynn/action"].written == 10


def test_start_stop_discard_answer_by_state(recorder, tmp_path):
    with pytest.raises(RecorderError, match="no episode is recording"):
        recorder.stop()
    with pytest.raises(RecorderError, match="nothing to discard"):
        recorder.discard()
    first = recorder.start("t", "o", 1, 0.0)
    with pytest.raises(RecorderError, match="already recording"):
        recorder.start("t", "o", 2, 0.0)
    assert recorder.discard() == first and not (tmp_path / "out" / first).exists()
    second = recorder.start("t", "o", 3, 0.0)
    assert second != first
    recorder.stop()
    assert recorder.discard() == second and not (tmp_path / "out" / second).exists()  # the one stopped last
    with pytest.raises(RecorderError):
        recorder.discard()


def test_lost_events_count_their_change_and_a_zero_change_is_no_loss(recorder):
    recorder.start("t", "o", 1, 0.0)
    assert recorder.note_lost("/rynn/operator/hands", 3)
    assert not recorder.note_lost("/rynn/operator/hands", 0)  # an event without a loss: not logged
    assert not recorder.note_lost("/tf", 0)
    summary = recorder.stop()
    assert summary["topics"]["/rynn/operator/hands"]["lost"] == 3
    assert "/tf" not in summary["topics"] and "/tf" not in recorder.totals.topics
    assert recorder.totals.topics["/rynn/operator/hands"].lost == 3


def test_a_failed_write_is_counted_not_silent(recorder):
    recorder.start("t", "o", 1, 0.0)
    with pytest.raises(KeyError):  # no such message type
        recorder.offer("/bogus", "no_pkg/msg/Nothing", b"\x00\x01\x00\x00", 10)
    summary = recorder.stop()
    assert summary["topics"]["/bogus"] == {"received": 1, "written": 0, "failed": 1, "lost": 0, "dropped": 0}
    assert recorder.totals.topics["/bogus"].failed == 1


def test_recover_rebuilds_a_torn_bag_up_to_its_last_flush(recorder, tmp_path):
    name = recorder.start("t", "o", 1, 0.0)
    for i in range(20):
        recorder.offer("/rynn/action", ACTION, serialized_action(recorder, 0.01 * i, i), 10 + i)
    recorder.flush_if_due(recorder.settings.flush_period_s + 1.0)
    for i in range(20, 25):  # still in the writer's memory when the process dies
        recorder.offer("/rynn/action", ACTION, serialized_action(recorder, 0.01 * i, i), 10 + i)
    assert recorder.drain(30.0)
    crashed = tmp_path / "out" / "episode_0042"
    snapshot(tmp_path / "out" / name, crashed)  # the files exactly as a SIGKILL would leave them
    mcap = crashed / f"{name}.mcap"
    with mcap.open("ab") as stream:
        stream.write(b"\x06" + (10**6).to_bytes(8, "little") + b"torn chunk")  # a record cut short
    assert not (crashed / "metadata.yaml").exists()
    with pytest.raises(FileNotFoundError, match="metadata"):
        Reader(crashed)
    assert crashed in find_incomplete(tmp_path / "out")

    summary = recover_episode(crashed)
    with Reader(crashed) as reader:
        assert {c.topic: c.msgcount for c in reader.connections} == {"/rynn/action": 20}
        sequences = [recorder.typestore.deserialize_cdr(raw, ACTION).sequence for _, _, raw in reader.messages()]
    assert sequences == list(range(20))
    assert summary["state"] == "recovered" and summary["topics"]["/rynn/action"]["written"] == 20
    custom = yaml.safe_load((crashed / "metadata.yaml").read_text())["rosbag2_bagfile_information"]["custom_data"]
    assert custom["state"] == "recovered" and custom["task"] == "t"
    assert not (tmp_path / "out" / "episode_0042.truncated").exists()
    recorder.stop()
    recover_main([str(tmp_path / "out")])  # nothing left to recover
    assert find_incomplete(tmp_path / "out") == []


@pytest.mark.parametrize("torn_to", [0, 3])
def test_recover_an_episode_killed_before_its_mcap_magic_reached_the_disk(recorder, tmp_path, torn_to):
    """A recorder SIGKILLed right after a start left a 0-byte MCAP file; recovering it raised, and the
    respawned recorder exited at every start-up (bench_soak): it is an episode with no message."""
    name = recorder.start("t", "o", 1, 0.0)
    crashed = tmp_path / "out" / "episode_0042"
    snapshot(tmp_path / "out" / name, crashed)
    mcap = crashed / f"{name}.mcap"
    mcap.write_bytes(MCAP_MAGIC[:torn_to])
    recorder.stop()
    assert find_incomplete(tmp_path / "out") == [crashed]

    summary = recover_episode(crashed)
    with Reader(crashed) as reader:
        assert list(reader.messages()) == []
    assert summary["state"] == "recovered" and summary["messages_written"] == 0
    assert find_incomplete(tmp_path / "out") == []


def test_config_file_and_topic_entries(tmp_path):
    settings = load_recorder_settings()
    assert "/rynn/action rynn_teleop_msgs/msg/RobotAction" in settings.topics
    assert settings.latched_topics == ["/rynn/mode", "/tf_static", "/robot_description"]
    assert parse_topic("/joint_states sensor_msgs/msg/JointState") == ("/joint_states", "sensor_msgs/msg/JointState")
    with pytest.raises(ValueError, match="must be"):
        parse_topic("/joint_states")
    bad = tmp_path / "bad.yaml"
    bad.write_text("topicz: []\n")
    with pytest.raises(ValueError, match=r"bad.yaml: unknown key\(s\) \['topicz'\]"):
        load_recorder_settings(bad)
    bad.write_text("topics: [/joint_states]\n")
    with pytest.raises(ValueError, match="must be"):
        load_recorder_settings(bad)
    assert checkpoint_sha256("") == "none"
    with pytest.raises(FileNotFoundError):
        checkpoint_sha256(tmp_path / "missing")


def test_the_given_checkpoint_is_recorded_by_name_and_hash(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"w")
    given = EpisodeSetup.create("t", "op", "digital", "", str(tmp_path), 1)
    assert given.world_model_checkpoint == tmp_path.name  # basename; the sha256 identifies it
    assert given.world_model_checkpoint_sha256 == checkpoint_sha256(tmp_path) != "none"
    none = EpisodeSetup.create("t", "op", "digital", "", "", 1)  # no world model named by the bring-up
    assert (none.world_model_checkpoint, none.world_model_checkpoint_sha256) == ("none", "none")


ACTION_QOS = OfferedQos(depth=10)  # the retarget node's /rynn/action publisher
INFINITE = {"sec": 9223372036, "nsec": 854775807}


def read_mcap(bag):
    """(header, {topic: (schema name, channel metadata)}, rosbag2 metadata record) with the mcap library."""
    with next(bag.glob("*.mcap")).open("rb") as stream:
        reader = make_reader(stream)
        summary = reader.get_summary()
        channels = {c.topic: (summary.schemas[c.schema_id].name, dict(c.metadata)) for c in summary.channels.values()}
        records = {m.name: dict(m.metadata) for m in reader.iter_metadata()}
        return reader.get_header(), channels, records


def test_bags_carry_offered_qos_type_hashes_and_jazzy_as_rosbag2_writes_them(recorder, tmp_path):
    recorder.offered_qos.update({"/rynn/mode": [LATCHED_QOS], "/rynn/action": [ACTION_QOS]})
    recorder.offer("/rynn/mode", STRING, serialized_mode(recorder, "digital"), 5)
    name = recorder.start("t", "o", 1_000, 0.0)
    recorder.offer("/rynn/action", ACTION, serialized_action(recorder, 0.5, 1), 2_000)
    recorder.stop()
    bag = tmp_path / "out" / name
    store = make_typestore()

    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["ros_distro"] == "jazzy" and info["version"] == 9
    topics = {t["topic_metadata"]["name"]: t["topic_metadata"] for t in info["topics_with_message_count"]}
    mode = topics["/rynn/mode"]
    assert mode["offered_qos_profiles"] == [{
        "history": "keep_last", "depth": 1, "reliability": "reliable", "durability": "transient_local",
        "deadline": INFINITE, "lifespan": INFINITE, "liveliness": "automatic", "liveliness_lease_duration": INFINITE,
        "avoid_ros_namespace_conventions": False}]
    assert mode["type_description_hash"] == store.hash_rihs01(STRING) and mode["type_description_hash"].startswith("RIHS01_")
    assert topics["/rynn/action"]["offered_qos_profiles"][0]["durability"] == "volatile"

    header, channels, records = read_mcap(bag)
    assert header.profile == "ros2"
    schema, metadata = channels["/rynn/mode"]
    assert schema == STRING and metadata["topic_type_hash"] == store.hash_rihs01(STRING)
    assert yaml.safe_load(metadata["offered_qos_profiles"]) == mode["offered_qos_profiles"]
    assert channels["/rynn/action"][1]["topic_type_hash"] == store.hash_rihs01(ACTION)
    assert yaml.safe_load(records["rosbag2"]["serialized_metadata"])["ros_distro"] == "jazzy"

    with Reader(bag) as reader:  # rosbags reads the QoS back from the channel metadata too
        by_topic = {c.topic: c for c in reader.connections}
        assert by_topic["/rynn/mode"].ext.offered_qos_profiles[0].durability.name == "TRANSIENT_LOCAL"


def test_recovery_keeps_the_offered_qos(recorder, tmp_path):
    recorder.offered_qos["/rynn/mode"] = [LATCHED_QOS]
    recorder.offer("/rynn/mode", STRING, serialized_mode(recorder, "real"), 5)
    name = recorder.start("t", "o", 1, 0.0)
    recorder.flush_if_due(recorder.settings.flush_period_s + 1.0)
    assert recorder.drain(30.0)  # the flush is queued; the writer thread, batching, may not have run it yet
    crashed = tmp_path / "out" / "episode_0077"
    snapshot(tmp_path / "out" / name, crashed)
    recover_episode(crashed)
    recorder.stop()
    info = yaml.safe_load((crashed / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    (mode,) = [t["topic_metadata"] for t in info["topics_with_message_count"]]
    assert mode["offered_qos_profiles"] == [LATCHED_QOS.as_rosbag2()] and info["ros_distro"] == "jazzy"


def test_qos_from_an_rclpy_profile_maps_unset_times_to_infinite():
    rclpy_qos = pytest.importorskip("rclpy.qos")
    from rclpy.duration import Duration

    profile = rclpy_qos.QoSProfile(depth=3, reliability=rclpy_qos.ReliabilityPolicy.BEST_EFFORT,
                                   durability=rclpy_qos.DurabilityPolicy.TRANSIENT_LOCAL, lifespan=Duration(seconds=2))
    qos = OfferedQos.from_profile(profile)
    assert (qos.depth, qos.reliability, qos.durability, qos.history) == (3, "best_effort", "transient_local", "keep_last")
    assert (qos.lifespan_ns, qos.deadline_ns) == (2 * 10**9, INFINITE_NS)
    assert OfferedQos.from_rosbag2(qos.as_rosbag2()) == qos


def test_episode_records_name_files_portably(recorder, tmp_path):
    """No absolute path of the recording machine in the metadata: package-relative or basename plus sha256."""
    name = recorder.start("t", "o", 1, 0.0)
    summary = recorder.stop()
    assert summary["robot_description"] == "rynn_common/description/rynn_bimanual.urdf"
    assert summary["world_model_checkpoint"] == "checkpoint"  # the fixture's directory, by basename
    bag = tmp_path / "out" / name
    for text in ((bag / "metadata.yaml").read_text(), (bag / SIDECAR_NAME).read_text()):
        assert str(tmp_path) not in text and "site-packages" not in text and "/work/" not in text
    assert portable_name(default_urdf_path()) == "rynn_common/description/rynn_bimanual.urdf"
    assert portable_name(tmp_path / "robots" / "m6.urdf") == "m6.urdf"


def test_the_writer_takes_messages_each_write_interval_and_the_bag_is_the_same_as_written_at_once(tmp_path):
    """write_interval_s: the writer thread is not woken per message (a stop still is); what it writes does not change."""
    import time

    bags = {}
    for interval in (0.0, 30.0):
        recorder = EpisodeRecorder(RecorderSettings(tmp_path / f"out_{interval:g}", write_interval_s=interval))
        recorder.start("t", "", 1_000, 0.0)
        for i in range(50):
            recorder.offer("/rynn/action", ACTION, serialized_action(recorder, 0.01 * i, i), 2_000 + i)
            recorder.offer("/rynn/mode", STRING, serialized_mode(recorder, ("real", "digital")[i % 2]), 2_000 + i)
        if interval:
            assert recorder.queued[0] == 100  # not woken by the messages
        summary = recorder.stop(timeout=10.0)  # a command wakes it: everything queued before, then the close
        assert summary["messages_written"] == 100
        recorder.close()
        with open(next((tmp_path / f"out_{interval:g}").glob("episode_*/*.mcap")), "rb") as stream:
            bags[interval] = [(channel.topic, message.log_time, message.data)
                              for _, channel, message in make_reader(stream).iter_messages(log_time_order=False)]
    assert len(bags[0.0]) == 100 and bags[30.0] == bags[0.0]

    recorder = EpisodeRecorder(RecorderSettings(tmp_path / "out_short", write_interval_s=0.05))
    recorder.start("t", "", 1_000, 0.0)
    recorder.offer("/rynn/action", ACTION, serialized_action(recorder, 0.5, 1), 2_000)
    started = time.monotonic()
    while recorder.queued[0] and time.monotonic() - started < 10.0:
        time.sleep(0.01)
    assert recorder.queued[0] == 0  # taken at the next interval, without a drain, stop or flush
    recorder.close()
