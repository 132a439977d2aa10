"""The camera relay's checks without DDS: the Image header read from CDR bytes, step/data length, future stamps."""

import pytest

from rynn_robot_bridge.bridge.camera_router import CameraRouter, FrameFormat, Routed
from rynn_robot_bridge.bridge.mode import Mode
from rynn_robot_bridge.image_layout import ImageHeader, image_layout_problem, read_image_header

CANONICAL = FrameFormat("rgb8", 640, 480, "camera_color_optical_frame")
SECOND = 1_000_000_000


def serialized_image(width=4, height=3, encoding="rgb8", step=None, data=None, frame_id="camera_color_optical_frame",
                     sec=1_700_000_000, nanosec=123):
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Image

    channels = {"rgb8": 3, "bgra8": 4, "mono8": 1}[encoding]
    step = width * channels if step is None else step
    msg = Image(height=height, width=width, encoding=encoding, step=step)
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = sec, nanosec, frame_id
    msg.data = bytes(range(256)) * (step * height // 256) + bytes(step * height % 256) if data is None else data
    return serialize_message(msg)


@pytest.mark.parametrize("frame_id", ["", "a", "ab", "abc", "camera_color_optical_frame"])  # every string padding
@pytest.mark.parametrize("encoding, width, step", [("rgb8", 4, 12), ("rgb8", 5, 16), ("bgra8", 3, 12), ("mono8", 7, 7)])
def test_header_read_from_cdr_matches_the_message(frame_id, encoding, width, step):
    pytest.importorskip("rclpy")
    raw = serialized_image(width=width, height=3, encoding=encoding, step=step, frame_id=frame_id)
    assert read_image_header(raw) == ImageHeader(1_700_000_000 * SECOND + 123, frame_id, width, 3, encoding, step, step * 3)


def test_header_of_a_short_data_field_reports_its_real_length():
    pytest.importorskip("rclpy")
    raw = serialized_image(width=640, height=480, step=1, data=bytes(10))
    header = read_image_header(raw)
    assert (header.step, header.data_size) == (1, 10)


@pytest.mark.parametrize("cut", [0, 3, 10, 40, -5])
def test_truncated_or_foreign_bytes_are_a_clear_error(cut):
    pytest.importorskip("rclpy")
    raw = serialized_image(width=4, height=3)
    with pytest.raises(ValueError):
        read_image_header(raw[:cut])
    with pytest.raises(ValueError, match="not an XCDR1 message"):
        read_image_header(b"\x00\x07\x00\x00" + raw[4:])


@pytest.mark.parametrize("fields, problem", [
    (("rgb8", 640, 480, 1920, 1920 * 480), None),
    (("rgb8", 640, 480, 1928, 1928 * 480), None),  # padded rows
    (("rgb8", 640, 480, 1, 10), "step 1 is shorter than a 640-pixel rgb8 row (1920 bytes)"),
    (("rgb8", 640, 480, 1920, 1920 * 480 - 1), "921599 bytes of data for 480 rows of step 1920 (921600 bytes)"),
    (("rgb8", 640, 480, 1920, 1920 * 480 + 3), "921603 bytes of data"),
    (("rgb8", 0, 480, 0, 0), "empty image 0x480"),
    (("yuv422", 640, 480, 1280, 1280 * 480), "unsupported encoding 'yuv422'"),
])
def test_layout_rule(fields, problem):
    found = image_layout_problem(*fields)
    assert found == problem if problem is None else problem in found


def header(stamp_ns, step=1920, data_size=1920 * 480):
    return ImageHeader(stamp_ns, CANONICAL.frame_id, 640, 480, "rgb8", step, data_size)


def test_router_rejects_a_frame_whose_step_or_data_cannot_hold_the_image():
    router = CameraRouter(Mode.REAL, CANONICAL, stall_timeout_s=0.5, now=0.0)
    published = []
    offer = lambda image: router.offer_image(Mode.REAL, image, 0.0, 10 * SECOND, lambda: published.append(image.stamp_ns))  # noqa: E731
    assert offer(header(1 * SECOND, step=1, data_size=10)) is Routed.BAD_LAYOUT
    assert offer(header(1 * SECOND, data_size=100)) is Routed.BAD_LAYOUT
    assert offer(header(1 * SECOND)) is Routed.FORWARDED
    assert published == [1 * SECOND]


def test_a_far_future_frame_is_rejected_and_never_blocks_the_stream():
    router = CameraRouter(Mode.REAL, CANONICAL, stall_timeout_s=0.5, now=0.0, max_future_s=0.5)
    published = []
    clock = 100 * SECOND

    def offer(stamp_ns, source=Mode.REAL):
        return router.offer_image(source, header(stamp_ns), 0.0, clock, lambda: published.append(stamp_ns))

    assert offer(clock - SECOND) is Routed.FORWARDED
    assert offer(clock + 86_400 * SECOND) is Routed.STAMP_IN_FUTURE  # one frame a day ahead
    assert offer(clock + SECOND // 2 + 1) is Routed.STAMP_IN_FUTURE  # just past the bound
    assert offer(clock - SECOND // 2) is Routed.FORWARDED  # the stream goes on
    assert offer(clock + SECOND // 2) is Routed.FORWARDED  # within the bound (clock skew)
    router.switch(Mode.DIGITAL, now=1.0)
    assert offer(clock + 86_400 * SECOND, Mode.DIGITAL) is Routed.STAMP_IN_FUTURE
    router.switch(Mode.REAL, now=2.0)
    clock += SECOND
    assert offer(clock) is Routed.FORWARDED
    assert published == [99 * SECOND, 99 * SECOND + SECOND // 2, 100 * SECOND + SECOND // 2, 101 * SECOND]


def test_image_to_rgb_uses_the_same_layout_rule():
    pytest.importorskip("rclpy")
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image

    from rynn_robot_bridge.camera_messages import image_to_rgb

    bad = deserialize_message(serialized_image(width=640, height=480, step=1, data=bytes(10)), Image)
    with pytest.raises(ValueError, match="step 1 is shorter than a 640-pixel rgb8 row"):
        image_to_rgb(bad)
    padded = deserialize_message(serialized_image(width=5, height=3, step=16), Image)
    assert image_to_rgb(padded).shape == (3, 5, 3)
