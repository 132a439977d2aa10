"""Bags written by the real recorder core (no DDS): the export tests of rynn_robot_bridge and the
integration test of rynn_world's training reader build their episodes with these; and a bag's copy
without its message definitions, which its readers must read with the project's typestore."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rynn_common.action_layout import joint_names
from rynn_common.description import D435I_COLOR
from rynn_robot_bridge.recording.recorder import EpisodeRecorder, RecorderSettings

WIDTH, HEIGHT = 64, 48
SECOND = 10**9


class BagBuilder:
    """Episodes written by the real recorder core (no DDS needed): camera 30 Hz, joint states 100 Hz, actions 200 Hz."""

    def __init__(self, out):
        self.recorder = EpisodeRecorder(RecorderSettings(out))
        self.store = self.recorder.typestore
        self.t = self.store.types

    def _header(self, stamp_ns, frame_id=""):
        time = self.t["builtin_interfaces/msg/Time"](sec=stamp_ns // SECOND, nanosec=stamp_ns % SECOND)
        return self.t["std_msgs/msg/Header"](stamp=time, frame_id=frame_id)

    def offer(self, topic, msgtype, msg, stamp_ns):
        self.recorder.offer(topic, msgtype, self.store.serialize_cdr(msg, msgtype), stamp_ns)

    def episode(self, mode, task, seconds=1.0, action_size=54, bad_actions=0, skip_topic=None, start_ns=10 * SECOND):
        self.offer("/rynn/mode", "std_msgs/msg/String", self.t["std_msgs/msg/String"](data=mode), start_ns - SECOND)
        name = self.recorder.start(task, "op-1", start_ns, 0.0)
        events = []
        events += [(start_ns + i * SECOND // 30, "image", i) for i in range(int(seconds * 30))]
        events += [(start_ns + i * SECOND // 100, "state", i) for i in range(int(seconds * 100))]
        events += [(start_ns + i * SECOND // 200, "action", i) for i in range(int(seconds * 200))]
        for stamp, kind, i in sorted(events):
            if kind == skip_topic:
                continue
            if kind == "image":
                pixels = np.full((HEIGHT, WIDTH, 3), (i * 8 % 256, 100 if mode == "real" else 200, 50), np.uint8)
                msg = self.t["sensor_msgs/msg/Image"](header=self._header(stamp, "camera_color_optical_frame"),
                                                      height=HEIGHT, width=WIDTH, encoding="rgb8", is_bigendian=0,
                                                      step=WIDTH * 3, data=pixels.reshape(-1))
                self.offer("/camera/camera/color/image_raw", "sensor_msgs/msg/Image", msg, stamp)
            elif kind == "state":
                msg = self.t["sensor_msgs/msg/JointState"](header=self._header(stamp), name=joint_names(),
                                                           position=np.full(54, i / 100), velocity=np.zeros(0),
                                                           effort=np.zeros(0))
                self.offer("/joint_states", "sensor_msgs/msg/JointState", msg, stamp)
            elif action_size == 54:
                positions = np.full(54, np.nan if i < bad_actions else i / 200)
                msg = self.t["rynn_teleop_msgs/msg/RobotAction"](header=self._header(stamp, "base_link"),
                                                                 positions=positions, sequence=i)
                self.offer("/rynn/action", "rynn_teleop_msgs/msg/RobotAction", msg, stamp)
            else:  # a producer that publishes the action as a plain array, with the wrong size
                layout = self.t["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
                msg = self.t["std_msgs/msg/Float64MultiArray"](layout=layout, data=np.zeros(action_size))
                self.offer("/rynn/action", "std_msgs/msg/Float64MultiArray", msg, stamp)
        self.recorder.stop()
        return self.recorder.output_dir / name


INTRINSICS = D435I_COLOR.scaled(WIDTH, HEIGHT)


class SkeletonBagBuilder(BagBuilder):
    """Adds CameraInfo and the retargeter's camera-frame skeleton (16 Hz, hands 0.5 m in front of the camera)."""

    def episode(self, *args, with_camera_info=True, **kwargs):
        self._with_camera_info = with_camera_info
        return super().episode(*args, **kwargs)

    def offer(self, topic, msgtype, msg, stamp_ns):
        super().offer(topic, msgtype, msg, stamp_ns)
        if topic == "/camera/camera/color/image_raw" and self.recorder.recording:
            if self._with_camera_info:
                k = INTRINSICS.matrix()
                info = self.t["sensor_msgs/msg/CameraInfo"](
                    header=msg.header, height=HEIGHT, width=WIDTH, distortion_model="plumb_bob", d=np.zeros(5),
                    k=k.ravel(), r=np.eye(3).ravel(), p=np.hstack([k, np.zeros((3, 1))]).ravel(), binning_x=0, binning_y=0,
                    roi=self.t["sensor_msgs/msg/RegionOfInterest"](x_offset=0, y_offset=0, height=0, width=0, do_rectify=False))
                super().offer("/camera/camera/color/camera_info", "sensor_msgs/msg/CameraInfo", info, stamp_ns)
            Point = self.t["geometry_msgs/msg/Point"]
            Hand = self.t["rynn_teleop_msgs/msg/HandSkeleton"]
            hands = [Hand(header=msg.header, side=side, joints=[Point(x=0.1 * (side - 0.5), y=0.01 * j, z=0.5) for j in range(21)],
                          confidence=np.ones(21, np.float32), valid=True) for side in (0, 1)]
            skeleton = self.t["rynn_teleop_msgs/msg/BimanualSkeleton"](
                header=msg.header, left=hands[0], right=hands[1], left_elbow=Point(x=-0.2, y=0.3, z=0.6),
                right_elbow=Point(x=0.0, y=0.0, z=0.0), left_elbow_valid=True, right_elbow_valid=False)
            super().offer("/rynn/operator/skeleton_camera", "rynn_teleop_msgs/msg/BimanualSkeleton", skeleton, stamp_ns)


def drop_message_definitions(bag: Path) -> None:
    """Rewrite the bag's MCAP with every schema emptied: the bag then names its message types but does
    not define them, so a reader needs a typestore that knows them."""
    from mcap.reader import make_reader
    from mcap.writer import Writer

    path = next(bag.glob("*.mcap"))
    with path.open("rb") as stream:
        reader = make_reader(stream)
        summary = reader.get_summary()
        messages = [(channel.id, message) for _, channel, message in reader.iter_messages()]
    with path.open("wb") as stream:
        writer = Writer(stream)
        writer.start(profile="ros2", library="copy without message definitions")
        schemas = {key: writer.register_schema(schema.name, "", b"") for key, schema in summary.schemas.items()}
        ids = {key: writer.register_channel(c.topic, c.message_encoding, schemas[c.schema_id], c.metadata)
               for key, c in summary.channels.items()}
        for channel_id, message in messages:
            writer.add_message(ids[channel_id], message.log_time, message.data, message.publish_time)
        writer.finish()
