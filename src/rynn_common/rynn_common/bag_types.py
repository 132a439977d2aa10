"""The one rosbags typestore of the project's bags: Jazzy's standard types plus rynn_teleop_msgs.

Every writer and reader of a bag (recorder, recovery, episode bag writer, exporters, training reader,
operator replay) takes its types from here, so a bag without stored message definitions (rosbag2 sqlite3
bags before Iron store none) still reads, and no two of them can know a message differently. ROS-free
(rosbags), and in rynn_common because the operator side and the robot side both read bags.
"""

from __future__ import annotations

from pathlib import Path

from rosbags.typesys import Stores, get_types_from_msg, get_typestore


def teleop_msg_dir() -> Path:
    """rynn_teleop_msgs' .msg files: the installed share directory, else the source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory

        installed = Path(get_package_share_directory("rynn_teleop_msgs")) / "msg"
        if installed.is_dir():
            return installed
    except (ImportError, LookupError, OSError):  # not installed, or no ament environment
        pass
    source = Path(__file__).resolve().parents[2] / "rynn_teleop_msgs" / "msg"
    if not source.is_dir():
        raise FileNotFoundError("rynn_teleop_msgs .msg files not found (neither installed nor in the source tree)")
    return source


def make_typestore():
    """Jazzy's standard types plus rynn_teleop_msgs, from the project's own .msg files."""
    store = get_typestore(Stores.ROS2_JAZZY)
    types = {}
    for path in sorted(teleop_msg_dir().glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(), f"rynn_teleop_msgs/msg/{path.stem}"))
    store.register(types)
    return store
