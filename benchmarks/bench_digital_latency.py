"""Pose-to-image latency in digital mode, per stage, and the 200 Hz command jitter, on the real graph.

Starts config/teleop_graph.yaml through the embedded launcher in digital mode
(synthetic operator, retarget, world model, bridge, simulated robot as the
reference camera) and measures, from this process over DDS:

* operator sample -> /tf received            (tracker node, one hop)
* operator sample -> skeleton received       (+ retarget node: IK, skeleton in the camera frame)
* world-model step stages                    (render/encode/DiT/decode, from its /rynn/status)
* operator sample -> world-model image       (private digital topic; image stamp = its skeleton's sample)
* operator sample -> canonical image         (after the bridge relay), and the relay itself per frame
* /rynn/action inter-arrival (retarget 200 Hz loop) and the bridge's 200 Hz command-cycle period

    .venv/bin/python benchmarks/bench_digital_latency.py [--seconds 20] [--model-config embedded_cpu] [--width 640 --height 480]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SOURCES = [REPO / "src" / p for p in ("rynn_retarget", "rynn_world_node", "rynn_robot_bridge")]
sys.path[:0] = [str(p) for p in SOURCES]
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")


def machine_info() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return (f"{cpu}, {os.cpu_count()} cores, load avg {os.getloadavg()[0]:.2f}; Python {platform.python_version()}, "
            f"{os.environ['RMW_IMPLEMENTATION']}, {platform.platform()}")


def free_lcm_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("", 0))
        return f"udpm://239.255.76.67:{probe.getsockname()[1]}?ttl=0"


def start_graph(options, log_dir: Path) -> tuple[subprocess.Popen, Path]:
    output = log_dir / "launcher.out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, SOURCES), os.environ.get("PYTHONPATH", "")])}
    launcher = subprocess.Popen(
        [sys.executable, "-m", "rynn_world.launcher", "mode:=digital", "source:=synthetic",
         f"model_config:={options.model_config}", f"camera_width:={options.width}", f"camera_height:={options.height}",
         f"lcm_url:={free_lcm_url()}", "--log-dir", str(log_dir), "--set", "rynn_bridge.status_rate_hz=2.0"],
        stdout=output.open("w"), stderr=subprocess.STDOUT, env=env, cwd=REPO,
    )
    deadline = time.monotonic() + 240
    while not re.search(r"\[rynn_launch\] all \d+ nodes up", output.read_text()):
        if launcher.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"the graph did not come up; see {output}")
        time.sleep(0.2)
    return launcher, output


class Probe:
    """Subscribes to every stage's output and keeps receive-time latencies (seconds) per stage."""

    def __init__(self, node):
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from rynn_teleop_msgs.msg import BimanualSkeleton, RobotAction, TeleopStatus
        from sensor_msgs.msg import Image
        from tf2_msgs.msg import TFMessage

        self.node = node
        self.measuring = False
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.private_received: dict[int, float] = {}
        self.action_arrivals: list[float] = []
        self.status: dict[str, object] = {}
        reliable = QoSProfile(depth=20, reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(TFMessage, "/tf", self._on_tf, QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        node.create_subscription(BimanualSkeleton, "/rynn/operator/skeleton_camera", self._stamped("skeleton"), reliable)
        node.create_subscription(Image, "/rynn/digital/camera/color/image_raw", self._on_private_image, reliable)
        node.create_subscription(Image, "/camera/camera/color/image_raw", self._on_canonical_image, reliable)
        node.create_subscription(RobotAction, "/rynn/action", self._on_action, QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
        node.create_subscription(TeleopStatus, "/rynn/status", lambda msg: self.status.__setitem__(msg.source, msg), 20)

    def _now(self) -> float:
        return time.time()

    def _age(self, header) -> float:
        return self._now() - (header.stamp.sec + header.stamp.nanosec * 1e-9)

    def _stamped(self, stage: str):
        def record(msg):
            if self.measuring:
                self.latency[stage].append(self._age(msg.header))
        return record

    def _on_tf(self, msg):
        if self.measuring and msg.transforms:
            self.latency["tf"].append(self._age(msg.transforms[0].header))

    def _on_private_image(self, msg):
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        self.private_received[stamp] = self._now()
        if self.measuring:
            self.latency["world_model_image"].append(self._age(msg.header))

    def _on_canonical_image(self, msg):
        now = self._now()
        if not self.measuring:
            return
        self.latency["canonical_image"].append(self._age(msg.header))
        private = self.private_received.pop(msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec, None)
        if private is not None:
            self.latency["bridge_relay"].append(now - private)

    def _on_action(self, _msg):
        if self.measuring:
            self.action_arrivals.append(time.monotonic())


def percentiles(values) -> str:
    values = np.asarray(values) * 1e3
    return f"p50 {np.percentile(values, 50):7.1f}  p90 {np.percentile(values, 90):7.1f}  p99 {np.percentile(values, 99):7.1f} ms  (n={len(values)})"


def report(probe: Probe, seconds: float, options) -> None:
    print(f"\ndigital mode, model {options.model_config}, camera {options.width}x{options.height}, {seconds:.0f} s measured")
    print("pose-to-image latency (operator sample stamp -> received in this process), cumulative:")
    for stage, label in (("tf", "tracker -> /tf"), ("skeleton", "+ retarget -> skeleton"),
                         ("world_model_image", "+ world model -> image published"), ("canonical_image", "+ bridge -> canonical topic")):
        if probe.latency[stage]:
            print(f"  {label:36s} {percentiles(probe.latency[stage])}")
    world = probe.status.get("world_model_node")
    if world is not None:
        print("world-model stages (its /rynn/status, per step of several frames):")
        for entry in world.latencies:
            print(f"  {entry.stage:36s} p50 {entry.p50 * 1e3:7.1f}  p99 {entry.p99 * 1e3:7.1f} ms  (last {entry.last * 1e3:.1f})")
        print(f"  frames published {world.outputs}, dropped inputs {world.dropped_inputs}, faults {list(world.faults) or 'none'}")
    frames = len(probe.latency["canonical_image"])
    print(f"canonical image rate: {frames / seconds:.1f} FPS")
    if probe.latency["bridge_relay"]:
        print(f"  {'bridge relay (private -> canonical)':36s} {percentiles(probe.latency['bridge_relay'])}")
    arrivals = np.diff(probe.action_arrivals)
    if arrivals.size:
        print("200 Hz command stream:")
        print(f"  /rynn/action inter-arrival here       mean {arrivals.mean() * 1e3:.2f} ms ({1 / arrivals.mean():.0f} Hz), "
              f"std {arrivals.std() * 1e3:.2f} ms, |dev from 5 ms| p99 {np.percentile(np.abs(arrivals - 0.005), 99) * 1e3:.2f} ms, "
              f"max {arrivals.max() * 1e3:.1f} ms")
    bridge = probe.status.get("rynn_bridge")
    if bridge is not None:
        for entry in bridge.latencies:
            if entry.stage == "command_period":
                print(f"  bridge LCM command cycle period       p50 {entry.p50 * 1e3:.2f}  p99 {entry.p99 * 1e3:.2f} ms")
    print(f"machine: {machine_info()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of frames before measuring")
    parser.add_argument("--model-config", default="embedded_cpu")
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    options = parser.parse_args()

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    with tempfile.TemporaryDirectory(prefix="bench_digital_") as log_dir:
        print(f"starting the graph (logs in {log_dir}) ...", flush=True)
        launcher, output = start_graph(options, Path(log_dir))
        rclpy.init()
        node = rclpy.create_node("bench_digital_latency")
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        probe = Probe(node)
        try:
            deadline = time.monotonic() + 120
            while not probe.private_received:
                if time.monotonic() > deadline:
                    sys.exit(f"no world-model frames; see {output}")
                executor.spin_once(timeout_sec=0.1)
            print(f"frames flowing; warming up {options.warmup:g} s, measuring {options.seconds:g} s", flush=True)
            end_warmup = time.monotonic() + options.warmup
            while time.monotonic() < end_warmup:
                executor.spin_once(timeout_sec=0.05)
            probe.measuring = True
            started = time.monotonic()
            while time.monotonic() - started < options.seconds:
                executor.spin_once(timeout_sec=0.05)
            probe.measuring = False
            report(probe, time.monotonic() - started, options)
        finally:
            node.destroy_node()
            rclpy.shutdown()
            launcher.send_signal(signal.SIGINT)
            launcher.wait(timeout=60)


if __name__ == "__main__":
    main()
