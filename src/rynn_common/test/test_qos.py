"""One latched profile: every publisher and subscriber of /rynn/mode, /robot_description and
/tf_static takes LATCHED_QOS, so none can drift to a durability that silently loses the state."""

from pathlib import Path

from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

from rynn_common.qos import LATCHED_QOS

SOURCES = Path(__file__).resolve().parents[2]  # src/


def test_latched_profile_keeps_the_last_message_for_late_joiners():
    assert (LATCHED_QOS.depth, LATCHED_QOS.reliability, LATCHED_QOS.durability) == (
        1, ReliabilityPolicy.RELIABLE, DurabilityPolicy.TRANSIENT_LOCAL)


def test_no_module_defines_its_own_latched_profile():
    definers = sorted(str(path.relative_to(SOURCES)) for path in SOURCES.rglob("*.py")
                      if "/test/" not in str(path) and "DurabilityPolicy.TRANSIENT_LOCAL" in path.read_text())
    assert definers == ["rynn_common/rynn_common/qos.py"], definers
