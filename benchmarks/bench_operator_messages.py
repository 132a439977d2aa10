"""CPU per operator sample in the operator container: tracker + glove message out, retarget node's input in.

Builds the tracker, glove and retarget nodes in one process as the graph's operator container does
(rynn_common.node_runner.run_components: in-process delivery where the tree has it), with real rclpy
and DDS, and a recorder-like subscriber of /tf and the hands topic in a second process. Then it
publishes ``--samples`` synthetic operator samples at ``--rate`` Hz (0: as fast as it can), each one
tracker message and one glove message (``publish_frame`` of each node), while an executor thread spins
the nodes (it delivers whatever the retarget node still receives over DDS). Printed: CPU microseconds
per sample of the publishing thread and of the executor thread (``time.thread_time``) and of the
recorder-like subscriber process, so the figure does not depend on how busy the machine is; and of the
whole composed process (``time.process_time``: the retarget worker and the 200 Hz loop too, which cost per
second rather than per message, and the worker's conversion of the samples it takes).

``--dds-rates 0,30`` measures, side by side in each repeat, the composed publishers putting every sample
on DDS (0) and at most 30 a second (the tracker and glove nodes' ``dds_rate_hz``; every sample still
reaches the retarget node in-process). ``--in-process messages,samples`` measures, side by side too, the
retarget node taking each sample in-process as a message (built by the tracker or glove node, read back
field by field) and as the fields that message would carry (no message built unless DDS takes one).

Compare two trees by running this file from each (``git archive main | tar -x -C DIR``, copy this
file in): a tree without rynn_common.local_delivery delivers over DDS only.

    .venv/bin/python benchmarks/bench_operator_messages.py [--samples 3000] [--repeats 3] [--rate 120] [--dds-rates 0,30]
        [--in-process messages,samples]
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

from bench_digital_latency import CpuMeter  # the benchmarks' one CPU reader (test_benchmark_cpu_meter)
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
    parser.add_argument("--rate", type=float, default=120.0, help="operator samples a second (0: as fast as possible)")
    parser.add_argument("--dds-rates", default="",
                        help="comma-separated dds_rate_hz of the composed publishers, measured in turn (default: as configured)")
    parser.add_argument("--in-process", default="samples",
                        help="comma-separated, measured in turn: samples (what the messages would carry, no message built) "
                             "and/or messages (a message built per sample and read back by the retarget node)")
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
        measure(options, connect_local, CpuMeter({"listener": listener.pid}))
    finally:
        listener.stdin.close()  # its watcher thread exits it (a SIGTERM can wait behind a busy spin)
        listener.wait(timeout=10)


def measure(options, connect_local, listener: CpuMeter) -> None:
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
    print(f"in-process: {', '.join(linked) or 'none'}; {options.samples} samples per repeat at "
          f"{options.rate:g} Hz; {os.cpu_count()} cores, load avg {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    dds_rates = [float(rate) for rate in options.dds_rates.split(",")] if options.dds_rates else [None]
    period = 1.0 / options.rate if options.rate > 0 else 0.0
    try:
        for repeat in range(options.repeats):
            for dds_rate, delivery in [(rate, kind) for rate in dds_rates for kind in options.in_process.split(",")]:
                label = ("" if dds_rate is None else f"dds_rate_hz {dds_rate:g}, ") + f"in-process {delivery}: "
                if dds_rate is not None:
                    for publisher in (tracker.publisher, glove.publisher):
                        publisher.dds_interval_s = 1.0 / dds_rate if dds_rate > 0 else 0.0
                if hasattr(retarget, "on_trackers"):  # a subscription without on_sample gets the message
                    on_trackers_sample = getattr(retarget, "on_trackers_sample", retarget.on_trackers)  # older trees
                    retarget.tf_input.on_sample = on_trackers_sample if delivery == "samples" else None
                    retarget.hands_input.on_sample = retarget.on_hands_sample if delivery == "samples" else None
                spinning = True
                thread = threading.Thread(target=spin)
                thread.start()
                accepted_before = retarget.stats.snapshot().dropped.get("superseded_tracker_sample", 0)
                listener.start()
                start, process_start = time.thread_time(), time.process_time()
                next_sample = time.monotonic()
                for frame in frames:
                    tracker.publish_frame(frame)
                    glove.publish_frame(frame)
                    next_sample += period
                    delay = next_sample - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                publishing, process = time.thread_time() - start, time.process_time() - process_start
                time.sleep(1.0)  # let the executor and the listener take what DDS still delivers
                spinning = False
                thread.join()
                listener_cpu = listener.used()[1]["listener"]
                superseded = retarget.stats.snapshot().dropped.get("superseded_tracker_sample", 0) - accepted_before
                per_sample = 1e6 / options.samples
                print(f"repeat {repeat}: {label}publishing thread {publishing * per_sample:7.1f} us/sample, executor thread "
                      f"{executor_cpu[0] * per_sample:7.1f}, composed total {(publishing + executor_cpu[0]) * per_sample:7.1f}"
                      f" us/sample; whole process {process * per_sample:7.1f} us/sample (its solver, 200 Hz loop and"
                      f" conversions of the samples it takes included); recorder-like subscriber"
                      f" {listener_cpu * per_sample:7.1f} us/sample; retarget node "
                      f"took {superseded} samples in (superseded: it received them)", flush=True)
    finally:
        for node in reversed(nodes):
            executor.remove_node(node)
            node.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
