"""CPU per operator sample in the operator container: tracker + glove message out, retarget node's input in.

Builds the tracker, glove and retarget nodes in one process as the graph's operator container does
(rynn_common.node_runner.run_components: in-process delivery where the tree has it), with real rclpy
and DDS, and a recorder-like subscriber of /tf and the hands topic in a second process. Then it
publishes ``--samples`` synthetic operator samples as fast as it can, each one tracker message and
one glove message (``publish_frame`` of each node), while an executor thread spins the nodes (it
delivers whatever the retarget node still receives over DDS). Printed: CPU microseconds per sample
of the publishing thread and of the executor thread (``time.thread_time``), so the figure does not
depend on how busy the machine is. The retarget worker and the 200 Hz loop are not counted (they
cost per second, not per message; bench_node_cpu.py measures them).

Compare two trees by running this file from each (``git archive main | tar -x -C DIR``, copy this
file in): a tree without rynn_common.local_delivery delivers over DDS only.

    .venv/bin/python benchmarks/bench_operator_messages.py [--samples 3000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_retarget")]
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

from rynn_common.ros_names import HANDS_TOPIC, TF_TOPIC  # after the source path

LISTENER = """
import os, sys, threading, rclpy, rclpy.executors
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()  # ends with the benchmark
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rynn_teleop_msgs.msg import BimanualSkeleton
from tf2_msgs.msg import TFMessage
rclpy.init()
node = rclpy.create_node("bench_listener")
qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
node.create_subscription(TFMessage, "/tf", lambda m: None, qos, raw=True)
node.create_subscription(BimanualSkeleton, sys.argv[1], lambda m: None, qos, raw=True)
print("listening", flush=True)
try:
    rclpy.spin(node)
except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
    pass  # terminated by the benchmark
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()

    try:
        from rynn_common.local_delivery import connect_local
    except ImportError:  # a tree from before in-process delivery
        connect_local = None

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    listener = subprocess.Popen([sys.executable, "-c", LISTENER, HANDS_TOPIC], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout.readline().strip() == "listening"
        measure(options, connect_local)
    finally:
        listener.terminate()
        listener.wait(timeout=10)


def measure(options, connect_local) -> None:
    import rclpy
    from rclpy.experimental import EventsExecutor

    from rynn_retarget.nodes.glove_node import GloveNode
    from rynn_retarget.nodes.retarget_node import RetargetNode
    from rynn_retarget.nodes.tracker_node import TrackerNode
    from rynn_retarget.operator.synthetic import SyntheticOperator

    rclpy.init()
    idle_feed = ["--ros-args", "-p", "rate_hz:=0.001"]  # the feeds publish once; this loop publishes the rest
    tracker = TrackerNode(cli_args=idle_feed, use_global_arguments=False)
    glove = GloveNode(cli_args=idle_feed, use_global_arguments=False)
    retarget = RetargetNode()
    nodes = [tracker, glove, retarget]
    linked = connect_local(nodes) if connect_local else []
    executor = EventsExecutor()
    for node in nodes:
        executor.add_node(node)
    spinning = True
    executor_cpu = [0.0]

    def spin() -> None:
        start = time.thread_time()
        while spinning:
            executor.spin_once(timeout_sec=0.05)
        executor_cpu[0] = time.thread_time() - start

    deadline = time.monotonic() + 30
    while tracker.count_subscribers(TF_TOPIC) < 2 and time.monotonic() < deadline:  # the retarget node and the listener
        time.sleep(0.1)
    operator = SyntheticOperator()
    frames = [operator.frame_at(i / 120.0) for i in range(options.samples)]
    print(f"in-process: {', '.join(linked) or 'none'}; {options.samples} samples per repeat")
    try:
        for repeat in range(options.repeats):
            spinning = True
            thread = threading.Thread(target=spin)
            thread.start()
            accepted_before = retarget.stats.snapshot().dropped.get("superseded_tracker_sample", 0)
            start = time.thread_time()
            for frame in frames:
                tracker.publish_frame(frame)
                glove.publish_frame(frame)
            publishing = time.thread_time() - start
            time.sleep(1.0)  # let the executor take what DDS still delivers
            spinning = False
            thread.join()
            superseded = retarget.stats.snapshot().dropped.get("superseded_tracker_sample", 0) - accepted_before
            per_sample = 1e6 / options.samples
            print(f"repeat {repeat}: publishing thread {publishing * per_sample:7.1f} us/sample, executor thread "
                  f"{executor_cpu[0] * per_sample:7.1f} us/sample, total {(publishing + executor_cpu[0]) * per_sample:7.1f}"
                  f" us/sample; retarget node took {superseded} samples as superseded (it received them)")
    finally:
        for node in reversed(nodes):
            executor.remove_node(node)
            node.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
