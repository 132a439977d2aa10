"""The packaged Fast DDS profile: when it is used, and that a process with it talks to one without it,
640x480 images included (the reason for the profile)."""

import os
import subprocess
import sys

import pytest

from ros_test_tools import wait_until
from rynn_common.dds_profile import PROFILE, use_packaged_profile


def test_used_when_nothing_is_chosen():
    environ = {}
    assert use_packaged_profile(environ)
    assert environ == {"FASTRTPS_DEFAULT_PROFILES_FILE": str(PROFILE), "FASTDDS_DEFAULT_PROFILES_FILE": str(PROFILE)}
    assert PROFILE.is_file()


@pytest.mark.parametrize("environ", [
    {"FASTRTPS_DEFAULT_PROFILES_FILE": "/etc/mine.xml"},
    {"FASTDDS_DEFAULT_PROFILES_FILE": "/etc/mine.xml"},
    {"FASTDDS_BUILTIN_TRANSPORTS": "LARGE_DATA"},
    {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"},
])
def test_the_users_choice_wins(environ):
    before = dict(environ)
    assert not use_packaged_profile(environ)
    assert environ == before


PUBLISHER = """
import sys, time
from rynn_common.dds_profile import use_packaged_profile
assert use_packaged_profile()
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
rclpy.init()
node = rclpy.create_node("profile_publisher")
publisher = node.create_publisher(Image, "/rynn_test/profile_images", QoSProfile(depth=30, reliability=ReliabilityPolicy.RELIABLE))
image = Image(height=480, width=640, encoding="rgb8", step=1920)
image.data = bytes(range(256)) * 3600
index = 0
while True:  # until the test has its images: no race between this writer's and the reader's discovery
    image.header.frame_id = str(index)
    publisher.publish(image)
    index += 1
    time.sleep(0.05)
"""


@pytest.mark.ros
def test_a_process_with_the_profile_sends_images_to_one_without(ros_node):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image

    received = []
    ros_node.create_subscription(Image, "/rynn_test/profile_images", received.append,
                                 QoSProfile(depth=30, reliability=ReliabilityPolicy.RELIABLE))
    environ = {key: value for key, value in os.environ.items() if "PROFILES_FILE" not in key and key != "FASTDDS_BUILTIN_TRANSPORTS"}
    process = subprocess.Popen([sys.executable, "-c", PUBLISHER], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert wait_until(lambda: len(received) >= 20, 60.0, spin=ros_node.spin_once), process.poll()
        indices = [int(image.header.frame_id) for image in received]
        assert indices == sorted(set(indices))  # in order, none twice
        assert all(bytes(image.data) == bytes(range(256)) * 3600 for image in received)
        assert max(shared_memory_mappings(process.pid)) >= 8 * 2**20  # its segment holds whole images (default: 512 KiB)
    finally:
        process.kill()
        output = process.communicate()[0]
    assert "error" not in output.lower(), output  # Fast DDS names a profile it cannot parse


def shared_memory_mappings(pid: int) -> list[int]:
    """Sizes of the Fast DDS shared-memory segments process ``pid`` has mapped."""
    sizes = []
    for line in open(f"/proc/{pid}/maps"):
        if "/dev/shm/fastrtps_" in line and not line.rstrip().endswith("_el"):
            start, end = (int(address, 16) for address in line.split()[0].split("-"))
            sizes.append(end - start)
    return sizes or [0]
