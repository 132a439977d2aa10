"""The console's camera views count every frame of the world model's 4-frame blocks even when their
process wakes only once a block (niced on a busy machine); at depth 1 they kept one frame in four and
the caption said 4 FPS for a 16 FPS stream."""

import time

import pytest

from ros_test_tools import wait_until

pytestmark = pytest.mark.ros

BLOCKS = 5
FRAMES_PER_BLOCK = 4  # the world model's latent block
FRAME_SPACING_S = 0.016  # a quarter of the model period apart


def frames_seen_when_woken_once_a_block(ros_node, publisher_qos, reader_qos) -> list[int]:
    """Frames a reader with ``reader_qos`` takes per block, spun only after each whole block."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from sensor_msgs.msg import Image

    topic = f"/test/camera_view_{reader_qos.depth}"
    reader = Node(f"camera_view_reader_{reader_qos.depth}", context=ros_node.context)
    executor = SingleThreadedExecutor(context=ros_node.context)
    executor.add_node(reader)
    try:
        taken = []
        reader.create_subscription(Image, topic, lambda raw: taken.append(raw), reader_qos, raw=True)
        publisher = ros_node.create_publisher(Image, topic, publisher_qos)
        assert wait_until(lambda: publisher.get_subscription_count() == 1, 10.0)
        frame = Image(height=128, width=208, encoding="rgb8", step=208 * 3, data=bytes(208 * 128 * 3))
        per_block = []
        for _ in range(BLOCKS):
            for _ in range(FRAMES_PER_BLOCK):
                publisher.publish(frame)
                time.sleep(FRAME_SPACING_S)
            before = len(taken)
            while True:  # the reader's one wake-up: it takes what its history holds, until nothing is left
                count = len(taken)
                executor.spin_once(timeout_sec=0.5)
                if len(taken) == count:
                    break
            per_block.append(len(taken) - before)
        ros_node.destroy_publisher(publisher)
        return per_block
    finally:
        executor.shutdown()
        reader.destroy_node()


def test_the_console_counts_every_frame_of_a_block(ros_node):
    from rynn_common.qos import CAMERA_VIEW_QOS, DIGITAL_CAMERA_QOS, RECORDED_CAMERA_QOS

    for publisher_qos in (DIGITAL_CAMERA_QOS, RECORDED_CAMERA_QOS):  # the world model's, the bridge's canonical
        assert frames_seen_when_woken_once_a_block(ros_node, publisher_qos, CAMERA_VIEW_QOS) == [FRAMES_PER_BLOCK] * BLOCKS


def test_a_depth_one_view_keeps_one_frame_a_block(ros_node):
    """Why the depth is more than 1: the profile the console had."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from rynn_common.qos import RECORDED_CAMERA_QOS

    depth_one = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
    assert frames_seen_when_woken_once_a_block(ros_node, RECORDED_CAMERA_QOS, depth_one) == [1] * BLOCKS
