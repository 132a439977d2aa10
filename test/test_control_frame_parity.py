"""Issue 14's parity test: a live session recorded by the recorder over real DDS, its skeletons
rendered by the training reader, equal the world-model node's own control frames bit for bit.

The launched graph runs digital with the synthetic operator and the recorder; the node publishes
every control frame it conditions a step on (``control_frame_topic``), stamped with the skeleton
message it rendered. Each one is looked up in the recorded bag by that stamp and rendered by the
training reader's function (``data.clips.render_skeleton`` in the bag's CameraInfo camera).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from launched_graph import ALL_UP, launcher_args, unique_lcm_url
from ros_test_tools import read_log, wait_until

pytestmark = [pytest.mark.ros, pytest.mark.slow]

DEBUG_TOPIC = "/rynn/debug/control_frame"


def _call(ros_node, srv_type, name):
    client = ros_node.create_client(srv_type, name)
    assert wait_until(client.service_is_ready, 60.0, spin=ros_node.spin_once), f"{name} not offered"
    future = client.call_async(srv_type.Request())
    assert wait_until(future.done, 60.0, spin=ros_node.spin_once), f"{name} did not answer"
    response = future.result()
    assert response.success, response.message
    return response.message


def _recorded_skeletons(bag: Path):
    """(header stamp in µs -> message, CameraInfo intrinsics) of the recorded episode, read as the training reader reads."""
    from rosbags.highlevel import AnyReader

    from rynn_common.bag_types import make_typestore
    from rynn_common.ros_names import CAMERA_INFO_TOPIC, CAMERA_SKELETON_TOPIC
    from rynn_world.skeleton import CameraIntrinsics

    skeletons, intrinsics = {}, None
    with AnyReader([bag], default_typestore=make_typestore()) as reader:
        connections = [c for c in reader.connections if c.topic in (CAMERA_SKELETON_TOPIC, CAMERA_INFO_TOPIC)]
        for connection, _, raw in reader.messages(connections=connections):
            msg = reader.deserialize(raw, connection.msgtype)
            if connection.topic == CAMERA_INFO_TOPIC:
                intrinsics = intrinsics or CameraIntrinsics(fx=msg.k[0], fy=msg.k[4], cx=msg.k[2], cy=msg.k[5],
                                                            width=msg.width, height=msg.height)
            else:
                skeletons[round((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9) * 1e6)] = msg
    return skeletons, intrinsics


def test_recorded_skeletons_render_to_the_nodes_control_frames(ros_node, start_process, tmp_path):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image
    from std_srvs.srv import Trigger

    from rynn_world.data.clips import render_skeleton
    from rynn_world.data.robot_episodes import read_episode  # noqa: F401  (the reader this test stands for)
    from rynn_world.model.configs import get_config
    from rynn_world.skeleton import ControlSample

    config = get_config("tiny")
    controls: list = []
    ros_node.create_subscription(Image, DEBUG_TOPIC, controls.append, QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE))
    launcher = start_process(launcher_args(
        tmp_path / "logs", "mode:=digital", "source:=synthetic", "model_config:=tiny", "camera_width:=320",
        "camera_height:=240", "record:=true", f"record_dir:={tmp_path / 'bags'}", "console:=false",
        f"lcm_url:={unique_lcm_url()}", sets=(f"world_model_node.control_frame_topic={DEBUG_TOPIC}",)), "launcher")
    assert wait_until(lambda: ALL_UP.search(read_log(launcher)) or launcher.poll() is not None, 300.0), read_log(launcher)
    assert launcher.poll() is None, read_log(launcher)
    assert wait_until(lambda: len(controls) >= 4, 120.0, spin=ros_node.spin_once), read_log(launcher)[-3000:]
    episode = Path(_call(ros_node, Trigger, "/rynn/recorder/start"))
    controls.clear()
    assert wait_until(lambda: len(controls) >= 40, 180.0, spin=ros_node.spin_once), read_log(launcher)[-3000:]
    _call(ros_node, Trigger, "/rynn/recorder/stop")
    wait_until(lambda: False, 0.5, spin=ros_node.spin_once)

    bag = episode if (episode / "metadata.yaml").is_file() else next(p.parent for p in episode.rglob("metadata.yaml"))
    skeletons, intrinsics = _recorded_skeletons(bag)
    assert intrinsics is not None and len(skeletons) > 20
    first, last = min(skeletons), max(skeletons)
    compared = 0
    for image in controls:
        stamp = round((image.header.stamp.sec + image.header.stamp.nanosec * 1e-9) * 1e6)
        if not first <= stamp <= last:
            continue  # rendered from a skeleton sent before the recording started
        assert stamp in skeletons, f"the node rendered a skeleton (stamp {stamp} µs) the recorder did not record"
        sample = ControlSample.from_message(skeletons[stamp])
        reader_frame = render_skeleton(sample.joints[None], sample.valid[None], intrinsics, config.height, config.width,
                                       sample.elbows[None])[0]
        node_frame = np.frombuffer(image.data, np.uint8).reshape(image.height, image.width, 3)
        assert reader_frame.max() > 0
        np.testing.assert_array_equal(node_frame, reader_frame)
        compared += 1
    assert compared >= 20, f"only {compared} control frames fell inside the recording"
