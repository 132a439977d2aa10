"""The one rosbag2 (Jazzy, format version 9) MCAP writer of the project, shared by the recorder and
the episode generator.

It writes what ``ros2 bag record -s mcap`` on Jazzy writes, so ``ros2 bag info/play``,
Foxglove and ``rosbags`` read the bags like any other: per topic the offered QoS
profiles (``ros2 bag play`` republishes a transient-local topic such as ``/rynn/mode``
latched only when the bag says so) and the RIHS01 type hash, in ``metadata.yaml`` and
in the MCAP channel metadata, and ``ros_distro: jazzy``. Messages are written as the
CDR bytes they arrived in. Built on the ``mcap`` library (public API, including
``flush``), with message definitions and type hashes from the project's ``rosbags`` typestore
(``rynn_common.bag_types.make_typestore``: the Jazzy types and rynn_teleop_msgs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import BinaryIO, Callable

import yaml
from mcap.writer import CompressionType
from mcap.writer import Writer as McapWriter

from rynn_robot_bridge.recording.disk_space import GuardedFile, SpaceReserve, open_file

ROS_DISTRO = "jazzy"
BAG_FORMAT_VERSION = 9
METADATA_FILE = "metadata.yaml"
INFINITE_NS = 2**63 - 1  # RMW_DURATION_INFINITE: what DDS reports for an unset deadline/lifespan/lease
NS_PER_S = 10**9


def _time(ns: int) -> dict[str, int]:
    return {"sec": int(ns) // NS_PER_S, "nsec": int(ns) % NS_PER_S}


@dataclass(frozen=True)
class OfferedQos:
    """One publisher's offered QoS, as rosbag2 stores it (policy names in lower case, times in ns)."""

    history: str = "keep_last"
    depth: int = 10
    reliability: str = "reliable"
    durability: str = "volatile"
    deadline_ns: int = INFINITE_NS
    lifespan_ns: int = INFINITE_NS
    liveliness: str = "automatic"
    liveliness_lease_duration_ns: int = INFINITE_NS
    avoid_ros_namespace_conventions: bool = False

    def as_rosbag2(self) -> dict:
        """The dict of one entry in metadata.yaml's ``offered_qos_profiles`` (format version 9)."""
        return {
            "history": self.history, "depth": int(self.depth), "reliability": self.reliability,
            "durability": self.durability, "deadline": _time(self.deadline_ns), "lifespan": _time(self.lifespan_ns),
            "liveliness": self.liveliness, "liveliness_lease_duration": _time(self.liveliness_lease_duration_ns),
            "avoid_ros_namespace_conventions": bool(self.avoid_ros_namespace_conventions),
        }

    @classmethod
    def from_rosbag2(cls, entry: dict) -> "OfferedQos":
        """Back from one ``as_rosbag2`` dict (a bag's metadata or MCAP channel metadata)."""
        def ns(time: dict) -> int:
            return int(time["sec"]) * NS_PER_S + int(time["nsec"])

        return cls(
            history=entry["history"], depth=int(entry["depth"]), reliability=entry["reliability"],
            durability=entry["durability"], deadline_ns=ns(entry["deadline"]), lifespan_ns=ns(entry["lifespan"]),
            liveliness=entry["liveliness"], liveliness_lease_duration_ns=ns(entry["liveliness_lease_duration"]),
            avoid_ros_namespace_conventions=bool(entry["avoid_ros_namespace_conventions"]),
        )

    @classmethod
    def from_profile(cls, profile) -> "OfferedQos":
        """From an rclpy ``QoSProfile`` (e.g. ``TopicEndpointInfo.qos_profile``); rclpy is not imported here."""
        def ns(duration) -> int:
            value = int(duration.nanoseconds)
            return INFINITE_NS if value in (0, INFINITE_NS) else value  # 0: unspecified, i.e. infinite

        return cls(
            history=profile.history.name.lower(), depth=int(profile.depth),
            reliability=profile.reliability.name.lower(), durability=profile.durability.name.lower(),
            deadline_ns=ns(profile.deadline), lifespan_ns=ns(profile.lifespan),
            liveliness=profile.liveliness.name.lower(),
            liveliness_lease_duration_ns=ns(profile.liveliness_lease_duration),
            avoid_ros_namespace_conventions=bool(profile.avoid_ros_namespace_conventions),
        )


LATCHED_QOS = OfferedQos(depth=1, durability="transient_local")  # /rynn/mode, /tf_static, /robot_description


def qos_yaml(profiles: list[OfferedQos]) -> str:
    """The MCAP channel's ``offered_qos_profiles`` string: the same YAML list metadata.yaml holds."""
    return yaml.safe_dump([p.as_rosbag2() for p in profiles], sort_keys=False) if profiles else ""


def parse_qos_yaml(text: str) -> list[OfferedQos]:
    """The profiles in an MCAP channel's ``offered_qos_profiles`` string ("" -> none)."""
    return [OfferedQos.from_rosbag2(entry) for entry in (yaml.safe_load(text) or [])]


@dataclass
class BagTopic:
    name: str
    msgtype: str
    type_hash: str
    offered_qos: list[OfferedQos]
    channel_id: int
    message_count: int = 0


@dataclass
class _Span:
    start_ns: int = INFINITE_NS
    end_ns: int = 0
    count: int = 0

    def add(self, stamp_ns: int) -> None:
        self.start_ns, self.end_ns, self.count = min(self.start_ns, stamp_ns), max(self.end_ns, stamp_ns), self.count + 1


class Rosbag2McapWriter:
    """A new bag directory ``path`` holding ``<name>.mcap``; ``metadata.yaml`` is written by ``close``.

    ``add_topic`` before the first ``write`` on a topic; ``flush`` puts everything written so far into
    the file (a crash after it loses nothing before it); ``abort`` leaves the MCAP file unfinished.
    """

    def __init__(self, path: Path, typestore, reserve: SpaceReserve | None = None,
                 opener: Callable[[Path], BinaryIO] = open_file):
        """``reserve``: space the file may use once its volume is full (rynn_robot_bridge.recording.disk_space);
        ``opener`` makes the file (tests pass a slow or failing one)."""
        self.path = Path(path)
        if reserve is None:
            try:
                self.path.mkdir(parents=True)
            except FileExistsError:
                raise FileExistsError(f"bag directory {self.path} exists already; not overwriting it") from None
        elif any(p.name != reserve.path.name for p in self.path.iterdir()):  # made by its episode, with the reserve
            raise FileExistsError(f"bag directory {self.path} holds files already; not overwriting it")
        self.mcap_path = self.path / f"{self.path.name}.mcap"
        self.store = typestore
        self.topics: dict[str, BagTopic] = {}
        self.custom_data: dict[str, str] = {}
        self._schemas: dict[str, int] = {}
        self._span = _Span()
        self._stream = GuardedFile(self.mcap_path, reserve, opener)
        self._mcap = McapWriter(self._stream, compression=CompressionType.NONE)
        self._mcap.start(profile="ros2", library=f"rynn_teleop rosbag2 writer (mcap {version('mcap')})")

    def add_topic(self, topic: str, msgtype: str, offered_qos: list[OfferedQos] = ()) -> BagTopic:
        """Register a topic (once); ``KeyError`` naming a type the typestore cannot describe."""
        if topic in self.topics:
            known = self.topics[topic]
            if known.msgtype != msgtype:
                raise ValueError(f"{topic} is already in the bag as {known.msgtype}, not {msgtype}")
            return known
        if msgtype not in self.store.types:
            raise KeyError(f"message type {msgtype} is unknown to the bag typestore (not Jazzy, not rynn_teleop_msgs)")
        if msgtype not in self._schemas:
            definition, _ = self.store.generate_msgdef(msgtype, ros_version=2)
            self._schemas[msgtype] = self._mcap.register_schema(msgtype, "ros2msg", definition.encode())
        type_hash = self.store.hash_rihs01(msgtype)
        profiles = list(offered_qos)
        channel_id = self._mcap.register_channel(
            topic, "cdr", self._schemas[msgtype],
            metadata={"offered_qos_profiles": qos_yaml(profiles), "topic_type_hash": type_hash},
        )
        self.topics[topic] = BagTopic(topic, msgtype, type_hash, profiles, channel_id)
        return self.topics[topic]

    def write(self, topic: str, stamp_ns: int, raw: bytes) -> None:
        entry = self.topics.get(topic)
        if entry is None:
            raise KeyError(f"{topic} was not added to the bag before writing")
        self._mcap.add_message(entry.channel_id, log_time=int(stamp_ns), data=bytes(raw), publish_time=int(stamp_ns))
        entry.message_count += 1
        self._span.add(int(stamp_ns))

    def write_message(self, topic: str, msg, stamp_ns: int) -> None:
        """A rosbags message object of the topic's type, serialized to CDR."""
        self.write(topic, stamp_ns, self.store.serialize_cdr(msg, self.topics[topic].msgtype))

    def flush(self) -> None:
        self._mcap.flush()

    @property
    def disk_full(self) -> bool:
        """A write found the volume full (it then went to the reserve, or failed)."""
        return self._stream.disk_full

    def metadata(self) -> dict:
        """``rosbag2_bagfile_information`` as rosbag2 Jazzy writes it (format version 9)."""
        start = self._span.start_ns if self._span.count else 0
        duration = self._span.end_ns - start if self._span.count else 0
        name = self.mcap_path.name
        return {
            "version": BAG_FORMAT_VERSION,
            "storage_identifier": "mcap",
            "duration": {"nanoseconds": duration},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": self._span.count,
            "topics_with_message_count": [
                {"topic_metadata": {"name": t.name, "type": t.msgtype, "serialization_format": "cdr",
                                    "offered_qos_profiles": [p.as_rosbag2() for p in t.offered_qos],
                                    "type_description_hash": t.type_hash},
                 "message_count": t.message_count}
                for t in self.topics.values()
            ],
            "compression_format": "",
            "compression_mode": "",
            "relative_file_paths": [name],
            "files": [{"path": name, "starting_time": {"nanoseconds_since_epoch": start},
                       "duration": {"nanoseconds": duration}, "message_count": self._span.count}],
            "custom_data": dict(self.custom_data) or None,
            "ros_distro": ROS_DISTRO,
        }

    def close(self) -> dict:
        """Finish the MCAP file (its ``rosbag2`` metadata record included), then write metadata.yaml."""
        information = self.metadata()
        serialized = yaml.safe_dump(information, sort_keys=False)
        self._mcap.add_metadata("rosbag2", {"serialized_metadata": serialized, "ROS_DISTRO": ROS_DISTRO})
        self._mcap.finish()
        self._stream.close()
        tmp = self.path / (METADATA_FILE + ".tmp")
        tmp.write_text(yaml.safe_dump({"rosbag2_bagfile_information": information}, sort_keys=False))
        os.replace(tmp, self.path / METADATA_FILE)
        return information

    def abort(self) -> None:
        """Close the file as it is (no summary, no metadata.yaml), e.g. before deleting the bag."""
        self._stream.close()

