"""CPU per message of the 200 Hz command, the 100 Hz joint states, robot_state_publisher's /tf and the hand
skeletons: built as Python messages vs packed as CDR bytes.

The retarget node publishes /rynn/action (RobotAction) at 200 Hz and /rynn/command/joint_states at
<= 50 Hz, the bridge /joint_states (JointState, 54 names) at 100 Hz. Each was a Python message
built and serialised per publish; now the bytes are packed into a preformatted buffer
(rynn_common.cdr_layout) and published as they are. This benchmark publishes the same values
both ways, interleaved message by message, over real DDS to a subscriber in a second process (the bridge,
the recorder, robot_state_publisher stand-in), at the graph's rate, and prints the publishing thread's
CPU microseconds per message (``time.thread_time``: independent of how busy the machine is). Then the
bridge's side of /rynn/action, interleaved too: the message deserialised (before) or its 54 positions read
from the bytes (``rynn_common.cdr_layout.robot_action_positions``). Last, the same interleaved publish of
robot_state_publisher's /tf (its moving links, 20 Hz in the graph) and of a BimanualSkeleton (the glove node's and
the retarget worker's, 30 Hz each): ``make_tf_message`` / ``make_bimanual_skeleton`` published as messages, against
``tf_message_bytes`` / ``bimanual_skeleton_bytes``.

    .venv/bin/python benchmarks/bench_raw_publish.py [--messages 2000] [--repeats 3] [--rate 200]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_robot_bridge")]
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

LISTENER = """
import os, sys, threading, rclpy
from rclpy.experimental import EventsExecutor
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()  # ends with the benchmark
from rynn_teleop_msgs.msg import RobotAction
from sensor_msgs.msg import JointState
rclpy.init()
node = rclpy.create_node("bench_raw_listener")
node.create_subscription(RobotAction, "/bench/action", lambda m: None, 100, raw=True)
node.create_subscription(JointState, "/bench/joint_states", lambda m: None, 100, raw=True)
from rynn_teleop_msgs.msg import BimanualSkeleton
from tf2_msgs.msg import TFMessage
node.create_subscription(TFMessage, "/bench/tf", lambda m: None, 100, raw=True)
node.create_subscription(BimanualSkeleton, "/bench/skeleton", lambda m: None, 100, raw=True)
executor = EventsExecutor()
executor.add_node(node)
print("listening", flush=True)
executor.spin()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rate", type=float, default=200.0, help="messages a second (0: as fast as possible)")
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    listener = subprocess.Popen([sys.executable, "-c", LISTENER], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
    try:
        assert listener.stdout.readline().strip() == "listening"
        measure(options)
    finally:
        listener.stdin.close()  # its watcher thread exits it
        listener.wait(timeout=10)


def measure(options) -> None:
    import numpy as np
    import rclpy
    from rynn_teleop_msgs.msg import RobotAction
    from sensor_msgs.msg import JointState

    from rynn_common.action_layout import joint_names, validate_action
    from rynn_common.cdr_layout import JointStateLayout, RobotActionLayout
    from rynn_common.ros_conversions import make_robot_action
    from rynn_common.ros_names import BASE_FRAME

    rclpy.init()
    node = rclpy.create_node("bench_raw_publish")
    action_pub = node.create_publisher(RobotAction, "/bench/action", 100)
    state_pub = node.create_publisher(JointState, "/bench/joint_states", 100)
    deadline = time.monotonic() + 30
    while (action_pub.get_subscription_count() < 1 or state_pub.get_subscription_count() < 1) and time.monotonic() < deadline:
        time.sleep(0.1)
    names = joint_names()
    rng = np.random.default_rng(0)
    values = [rng.uniform(-2.0, 2.0, (3, len(names))) for _ in range(options.messages)]
    action_layout = RobotActionLayout(BASE_FRAME)
    state_layout = JointStateLayout(names, (len(names),) * 3)
    clock = node.get_clock()

    def as_messages(i: int) -> None:  # what the nodes did
        position, velocity, effort = values[i]
        stamp = clock.now().to_msg()
        action_pub.publish(make_robot_action(position, stamp, BASE_FRAME, i))
        msg = JointState(name=names, position=list(position), velocity=list(velocity), effort=list(effort))
        msg.header.stamp = stamp
        state_pub.publish(msg)

    def as_bytes(i: int) -> None:  # what they do now
        position, velocity, effort = values[i]
        stamp_ns = clock.now().nanoseconds
        action_pub.publish(action_layout.pack(stamp_ns, validate_action(position), i))
        state_pub.publish(state_layout.pack(stamp_ns, position, velocity, effort))

    period = 1.0 / options.rate if options.rate > 0 else 0.0
    print(f"{options.messages} RobotAction + {options.messages} JointState (54 joints) each way per repeat, "
          f"{options.rate:g} pairs a second; "
          f"{os.cpu_count()} cores, load avg {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    try:
        for repeat in range(options.repeats):
            cpu = interleaved((("messages", as_messages), ("bytes", as_bytes)), options.messages, period)
            print(f"repeat {repeat}: " + ", ".join(f"{label} {1e6 * seconds / options.messages:6.1f}"
                                                   for label, seconds in cpu.items())
                  + " us per RobotAction + JointState", flush=True)
        # the bridge's side of /rynn/action: the message deserialised, or its positions read from the bytes
        from rclpy.serialization import deserialize_message

        from rynn_common.cdr_layout import robot_action_positions

        packets = [action_layout.pack(clock.now().nanoseconds, validate_action(values[i][0]), i)
                   for i in range(options.messages)]
        takes = (("deserialize", lambda raw: np.asarray(deserialize_message(raw, RobotAction).positions)),
                 ("positions read", robot_action_positions))
        cpu = {label: 0.0 for label, _ in takes}
        for i, raw in enumerate(packets):
            for label, take in takes if i % 2 else takes[::-1]:
                start = time.thread_time()
                take(raw)
                cpu[label] += time.thread_time() - start
        print("bridge take: " + ", ".join(f"{label} {1e6 * seconds / options.messages:5.1f}" for label, seconds in cpu.items())
              + " us per RobotAction", flush=True)
        tf_and_skeletons(node, options, rng)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def interleaved(variants, count: int, period: float) -> dict[str, float]:
    """CPU-seconds of each variant's ``publish(i)`` over ``count`` rounds, message by message, alternating which goes
    first (the same machine state for both), a round every ``period`` s."""
    cpu = {label: 0.0 for label, _ in variants}
    next_at = time.monotonic()
    for i in range(count):
        for label, publish in variants if i % 2 else variants[::-1]:
            start = time.thread_time()
            publish(i)
            cpu[label] += time.thread_time() - start
        next_at += period
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    return cpu


def tf_and_skeletons(node, options, rng) -> None:
    """robot_state_publisher's /tf of the robot's moving links and a BimanualSkeleton, built vs packed."""
    from rynn_teleop_msgs.msg import BimanualSkeleton
    from tf2_msgs.msg import TFMessage

    from rynn_common.cdr_layout import BimanualSkeletonLayout, TfMessageLayout
    from rynn_common.description import resolve_urdf_path
    from rynn_common.ros_conversions import bimanual_skeleton_bytes, make_bimanual_skeleton, make_tf_message, tf_message_bytes
    from rynn_common.ros_names import CAMERA_FRAME
    from rynn_robot_bridge.robot_state import RobotStatePublisherCore

    core = RobotStatePublisherCore(resolve_urdf_path(None))
    names = list(core.moving_joints)
    links = [core.update(names, rng.uniform(-0.3, 0.3, len(names))) for _ in range(50)]
    frames = [(t.parent, t.child) for t in links[0]]
    tf_layout = TfMessageLayout(frames)
    hands = rng.normal(scale=0.1, size=(50, 2, 21, 3))
    skeleton_layout = BimanualSkeletonLayout(*[CAMERA_FRAME] * 3)
    tf_pub = node.create_publisher(TFMessage, "/bench/tf", 100)
    skeleton_pub = node.create_publisher(BimanualSkeleton, "/bench/skeleton", 100)
    deadline = time.monotonic() + 30
    while (tf_pub.get_subscription_count() < 1 or skeleton_pub.get_subscription_count() < 1) and time.monotonic() < deadline:
        time.sleep(0.1)
    clock = node.get_clock()
    elbows = dict(left_elbow=[0.1, 0.2, 0.3], right_elbow=[0.3, 0.2, 0.1])

    def as_messages(i: int) -> None:  # what the nodes did
        transforms, stamp = links[i % 50], clock.now().to_msg()
        tf_pub.publish(make_tf_message(frames, [t.matrix for t in transforms], stamp))
        skeleton_pub.publish(make_bimanual_skeleton(*hands[i % 50], stamp, CAMERA_FRAME, **elbows))

    def as_bytes(i: int) -> None:  # what they do now
        transforms, stamp_ns = links[i % 50], clock.now().nanoseconds
        tf_pub.publish(tf_message_bytes(tf_layout, [t.matrix for t in transforms], stamp_ns))
        skeleton_pub.publish(bimanual_skeleton_bytes(skeleton_layout, *hands[i % 50], stamp_ns, **elbows))

    count = max(options.messages // 4, 1)
    print(f"{count} /tf ({len(frames)} links) + {count} BimanualSkeleton each way per repeat, 30 pairs a second")
    for repeat in range(options.repeats):
        cpu = interleaved((("messages", as_messages), ("bytes", as_bytes)), count, 1.0 / 30.0)
        print(f"repeat {repeat}: " + ", ".join(f"{label} {1e6 * seconds / count:6.1f}" for label, seconds in cpu.items())
              + " us per /tf + BimanualSkeleton", flush=True)


if __name__ == "__main__":
    main()
