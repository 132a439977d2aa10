"""One latched profile: every publisher and subscriber of /rynn/mode, /robot_description and
/tf_static takes LATCHED_QOS, so none can drift to a durability that silently loses the state.
Every endpoint takes a named profile from rynn_common.qos (the live ones LIVE_QOS), so no module
spells a profile of its own and each profile's depth and reliability is explained in one place."""

import re
from pathlib import Path

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from rynn_common import qos
from rynn_common.qos import LATCHED_QOS, LIVE_QOS

SOURCES = Path(__file__).resolve().parents[2]  # src/


def test_latched_profile_keeps_the_last_message_for_late_joiners():
    assert (LATCHED_QOS.depth, LATCHED_QOS.reliability, LATCHED_QOS.durability) == (
        1, ReliabilityPolicy.RELIABLE, DurabilityPolicy.TRANSIENT_LOCAL)


def test_no_module_defines_its_own_latched_profile():
    definers = sorted(str(path.relative_to(SOURCES)) for path in SOURCES.rglob("*.py")
                      if "/test/" not in str(path) and "DurabilityPolicy.TRANSIENT_LOCAL" in path.read_text())
    assert definers == ["rynn_common/rynn_common/qos.py"], definers


def test_live_profile_is_reliable_and_keeps_the_newest_ten():
    assert (LIVE_QOS.depth, LIVE_QOS.reliability, LIVE_QOS.durability) == (
        10, ReliabilityPolicy.RELIABLE, DurabilityPolicy.VOLATILE)


def test_no_module_builds_its_own_profile():
    """Neither a QoSProfile(...) of its own, nor one of rclpy's predefined profiles, nor a bare depth
    (rclpy's reliable depth-N profile) passed to create_publisher / create_subscription."""
    own_profile = re.compile(r"QoSProfile\(")
    rclpy_profile = re.compile(r"\bqos_profile_\w+|QoSPresetProfiles")
    bare_depth = re.compile(r"create_(publisher|subscription)\([^\n]*, \d+\)")
    offenders = sorted(f"{path.relative_to(SOURCES)}: {match.group(0)}" for path in SOURCES.rglob("*.py")
                       if "/test/" not in str(path) and path.name != "qos.py"
                       for pattern in (own_profile, rclpy_profile, bare_depth) for match in pattern.finditer(path.read_text()))
    assert offenders == [], offenders


def test_every_profile_says_why_in_the_module_docstring():
    profiles = [name for name, value in vars(qos).items() if isinstance(value, QoSProfile)]
    assert "LATEST_ONLY_QOS" in profiles and "RECORDER_IMAGE_QOS" in profiles
    assert [name for name in profiles if f"``{name}``" not in qos.__doc__] == []


def test_the_glove_node_writes_the_recorded_hands_with_the_recorded_stream_profile():
    """At LIVE_QOS's 10 a starved recorder lost 957 hands samples in a 30-minute soak."""
    glove_node = (SOURCES / "rynn_retarget/rynn_retarget/nodes/glove_node.py").read_text()
    writers = re.findall(r"(?:LocalPublisher|create_publisher)\([^)]*\)", glove_node)
    assert writers == ["LocalPublisher(self, BimanualSkeleton, topic, RECORDED_STREAM_QOS, self.settings.dds_rate_hz)"], writers
