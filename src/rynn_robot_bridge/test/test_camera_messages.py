"""One path for camera messages: the live nodes' rclpy Image/CameraInfo and the episode bag writer's
rosbags ones take their contents from ``camera_messages``, so a generated or exported episode holds the
bytes a live camera node publishes; every reader decodes an Image with ``camera_messages.image_to_rgb``."""

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

SOURCES = Path(__file__).resolve().parents[2]  # src/
CAMERA_MESSAGES = "rynn_robot_bridge/rynn_robot_bridge/camera_messages.py"
MESSAGE_TYPES = {"Image", "CameraInfo", "sensor_msgs/msg/Image", "sensor_msgs/msg/CameraInfo"}
# What a construction may add to the shared fields: the header, and the defaults a rosbags message spells out.
OWN_FIELDS = {"header", "binning_x", "binning_y", "roi"}


def _source_modules():
    return [path for path in sorted(SOURCES.rglob("*.py")) if "/test/" not in str(path)]


def _constructed_type(call: ast.Call) -> str | None:
    """``Image`` for ``Image(...)``, ``sensor_msgs/msg/Image`` for ``types["sensor_msgs/msg/Image"](...)``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Subscript) and isinstance(func.slice, ast.Constant):
        return func.slice.value
    return None


def test_every_camera_message_takes_its_contents_from_camera_messages():
    """Each Image or CameraInfo built in the suite spreads a ``camera_messages`` fields dict (``**``) and
    spells no content field itself; the old live and bag-writer builders each spelled all of them."""
    builders, offenders = [], []
    for path in _source_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and _constructed_type(node) in MESSAGE_TYPES:
                where = f"{path.relative_to(SOURCES)}:{node.lineno}"
                builders.append(where)
                own = sorted(k.arg for k in node.keywords if k.arg is not None and k.arg not in OWN_FIELDS)
                if own or not any(k.arg is None for k in node.keywords):
                    offenders.append(f"{where} spells {own}")
    assert offenders == [], offenders
    assert {where.split(":")[0] for where in builders} == {
        "rynn_robot_bridge/rynn_robot_bridge/ros_camera.py", "rynn_robot_bridge/rynn_robot_bridge/episodes/bag_writer.py"}


def test_no_module_but_camera_messages_decodes_image_pixels():
    """The training reader had its own decoder, without the step and data length checks."""
    decoding = re.compile(r"frombuffer\([^)]*\.data\b")
    decoders = sorted(str(path.relative_to(SOURCES)) for path in _source_modules() if decoding.search(path.read_text()))
    assert decoders == [CAMERA_MESSAGES], decoders


def _stored_messages(bag: Path) -> dict[str, bytes]:
    from mcap.reader import make_reader

    with next(bag.glob("*.mcap")).open("rb") as stream:
        return {channel.topic: message.data for _, channel, message in make_reader(stream).iter_messages()}


def test_the_bag_writer_stores_the_bytes_a_live_camera_node_publishes(tmp_path):
    """Byte for byte, but for the alignment padding: Fast CDR leaves it unset on the wire (the bytes after a
    string's NUL differ from one serialisation to the next), rosbags writes zeros; so the live bytes are
    compared with their padding zeroed by a rosbags round trip."""
    from builtin_interfaces.msg import Time
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import CameraInfo, Image

    from rynn_common.bag_types import make_typestore
    from rynn_common.description import CameraIntrinsics
    from rynn_common.ros_names import CAMERA_INFO_TOPIC, IMAGE_TOPIC, REFERENCE_IMAGE_TOPIC
    from rynn_robot_bridge.episodes.bag_writer import EpisodeBagWriter
    from rynn_robot_bridge.ros_camera import make_camera_info, make_image

    intrinsics = CameraIntrinsics(64, 48, 50.5, 51.25, 31.5, 23.75)
    rgb = np.random.default_rng(3).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    stamp_ns = 1_764_825_600_123_456_789
    writer = EpisodeBagWriter(tmp_path / "bag", intrinsics)
    writer.write_reference_image(rgb[::2, ::2], stamp_ns)  # a strided view: the writer copies it as the nodes do
    writer.write_frame(rgb, stamp_ns)
    writer.close({})
    stored = _stored_messages(tmp_path / "bag")

    stamp = Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
    live = {IMAGE_TOPIC: (make_image(rgb, stamp), "sensor_msgs/msg/Image"),
            REFERENCE_IMAGE_TOPIC: (make_image(rgb[::2, ::2], stamp), "sensor_msgs/msg/Image"),
            CAMERA_INFO_TOPIC: (make_camera_info(intrinsics, stamp), "sensor_msgs/msg/CameraInfo")}
    store = make_typestore()
    for topic, (msg, msgtype) in live.items():
        published = serialize_message(msg)
        assert len(stored[topic]) == len(published), topic
        assert stored[topic] == bytes(store.serialize_cdr(store.deserialize_cdr(published, msgtype), msgtype)), topic
        assert deserialize_message(stored[topic], type(msg)) == msg, topic
    assert {type(msg) for msg, _ in live.values()} == {Image, CameraInfo}


@pytest.mark.parametrize("rgb, problem", [
    (np.zeros((4, 6), np.uint8), r"\(4, 6\) uint8"),  # grey, no channel axis
    (np.zeros((4, 6, 4), np.uint8), r"\(4, 6, 4\) uint8"),  # RGBA
    (np.zeros((4, 6, 3), np.float32), r"\(4, 6, 3\) float32"),  # not 8-bit: the bag writer converted it silently
])
def test_an_array_that_is_not_rgb8_is_refused_by_every_writer(rgb, problem, tmp_path):
    """The bag writer wrote the first two as Images whose step and data do not fit their size."""
    from builtin_interfaces.msg import Time

    from rynn_common.description import CameraIntrinsics
    from rynn_robot_bridge.episodes.bag_writer import EpisodeBagWriter
    from rynn_robot_bridge.ros_camera import make_image

    refusal = f"rgb8 needs an \\(H, W, 3\\) uint8 array, got {problem}"
    with pytest.raises(ValueError, match=refusal):
        make_image(rgb, Time())
    writer = EpisodeBagWriter(tmp_path / "bag", CameraIntrinsics(6, 4, 5.0, 5.0, 3.0, 2.0))
    with pytest.raises(ValueError, match=refusal):
        writer.write_frame(rgb, 1)


def test_camera_info_gives_back_the_intrinsics_it_was_filled_from():
    from rynn_common.description import CameraIntrinsics
    from rynn_robot_bridge.camera_messages import camera_info_fields, intrinsics_from_camera_info

    intrinsics = CameraIntrinsics(640, 480, 615.25, 614.5, 320.75, 239.125)
    assert intrinsics_from_camera_info(SimpleNamespace(**camera_info_fields(intrinsics))) == intrinsics
