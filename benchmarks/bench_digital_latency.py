"""The default graph in real time: canonical FPS and frame age in digital then real mode, CPU of every process.

One run starts src/rynn_world_node/config/teleop_graph.yaml through the embedded launcher exactly as
a user would (synthetic operator at its nominal rates, retarget at 200 Hz, bridge,
recorder on and recording an episode, world model ``embedded_cpu`` with its
packaged checkpoint, the simulated robot as the real robot and camera), then
measures from this separate process over DDS:

* the canonical camera stream ``/camera/camera/color/image_raw``: frames per second
  and frame age (arrival wall time - header stamp), p50/p99, in digital mode, then
  (after ``/rynn/set_mode``) in real mode;
* the 200 Hz command stream: the rate the retarget node published ``/rynn/action`` at (the output
  count in its ``/rynn/status``) and the bridge's LCM command-cycle period (its ``/rynn/status``);
  ``--action-probe`` also subscribes here and prints the inter-arrival jitter, at a cost: a third reader
  of the 200 Hz stream makes the retarget node's every write longer (``--action-probe`` in
  docs/benchmarks.md), so the default leaves the graph's readers as a user's graph has them;
* the CPU share (% of one core, psutil) of every graph process over each window, and
  the sum of everything that is not the world model or the simulated robot.

    .venv/bin/python benchmarks/bench_digital_latency.py [--seconds 20] [--warmup 8] [--runs 3] [--digital-only] [--json F]
        [--action-probe] [launch arguments name:=value ...]

e.g. ``compose:=false`` runs every node as its own process (see src/rynn_world_node/config/teleop_graph.yaml).
The machine line says how loaded the machine was: the figures are only comparable
between runs on the same, equally loaded machine.
"""

from __future__ import annotations

import argparse
import json
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
from pathlib import Path

import numpy as np
import psutil

REPO = Path(__file__).resolve().parents[1]
SOURCES = [REPO / "src" / p for p in ("rynn_common", "rynn_retarget", "rynn_world_node", "rynn_robot_bridge")]
sys.path[:0] = [str(p) for p in SOURCES]
from rynn_common.ros_names import (  # from the sources just put on sys.path
    ACTION_TOPIC,
    DIAGNOSTICS_TOPIC,
    IMAGE_TOPIC,
    RECORDER_SERVICES,
    SET_MODE_SERVICE,
    STATUS_TOPIC,
)

os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")

STARTED = re.compile(r"\[rynn_launch\] started (\S+) \(pid (\d+)")
ALL_UP = re.compile(r"\[rynn_launch\] all \d+ nodes up")
# Processes the graph's own-work budget (operator side, bridge, recorder, robot_state_publisher: <= 40 % of one
# core in digital mode while recording) does not count: the model, the robot's stand-in, the optional console.
NOT_BUDGETED = ("world_model", "sim_robot", "operator_console")
RETARGET_NODE = "retarget_node"  # its /rynn/status source; its output count is the /rynn/action messages it published
BUDGET_PERCENT = 40.0


def machine_info() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return (f"{cpu}, {os.cpu_count()} cores, load avg {load} (shared machine: other work may run); "
            f"Python {platform.python_version()}, {os.environ['RMW_IMPLEMENTATION']}, {platform.platform()}")


def free_lcm_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("", 0))
        return f"udpm://239.255.76.67:{probe.getsockname()[1]}?ttl=0"


def launch_command(arguments: list[str], log_dir: Path, overrides: list[str] = ()) -> list[str]:
    defaults = {"mode": "digital", "source": "synthetic", "record": "true", "record_dir": str(log_dir / "bags"),
                "lcm_url": free_lcm_url()}
    given = {item.partition(":=")[0] for item in arguments}
    chosen = [f"{name}:={value}" for name, value in defaults.items() if name not in given] + arguments
    return [sys.executable, "-m", "rynn_world.launcher", *chosen, "--log-dir", str(log_dir),
            "--set", "rynn_bridge.status_rate_hz=2.0", *(item for value in overrides for item in ("--set", value))]


def start_graph(command: list[str], log_dir: Path, deadline_s: float = 300.0) -> tuple[subprocess.Popen, Path]:
    """The launched graph once every node is up (returns then; exits after ``deadline_s`` without it)."""
    output = log_dir / "launcher.out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, SOURCES), os.environ.get("PYTHONPATH", "")])}
    launcher = subprocess.Popen(command, stdout=output.open("w"), stderr=subprocess.STDOUT, env=env, cwd=REPO)
    deadline = time.monotonic() + deadline_s
    while not ALL_UP.search(output.read_text()):
        if launcher.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"the graph did not come up; see {output}:\n{output.read_text()[-3000:]}")
        time.sleep(0.2)
    return launcher, output


class CpuMeter:
    """CPU seconds of each graph process (itself, not its children) between ``start()`` and ``shares()``."""

    def __init__(self, processes: dict[str, int]):
        self.processes = {}
        for name, pid in processes.items():
            try:
                self.processes[name] = psutil.Process(pid)
            except psutil.NoSuchProcess:
                print(f"note: {name} (pid {pid}) had already exited", flush=True)
        self._start: dict[str, float] = {}
        self._started_at = 0.0

    @staticmethod
    def _seconds(process: psutil.Process) -> float:
        try:
            times = process.cpu_times()
            return times.user + times.system
        except psutil.NoSuchProcess:
            return float("nan")

    def start(self) -> None:
        self._started_at = time.monotonic()
        self._start = {name: self._seconds(process) for name, process in self.processes.items()}

    def used(self) -> tuple[float, dict[str, float]]:
        """(wall seconds since ``start()``, CPU seconds each process used in them)."""
        elapsed = time.monotonic() - self._started_at
        return elapsed, {name: self._seconds(process) - self._start[name] for name, process in self.processes.items()}

    def shares(self) -> dict[str, float]:
        """Percent of one core per process over the window."""
        elapsed, used = self.used()
        return {name: 100.0 * seconds / elapsed for name, seconds in used.items()}


def is_budgeted(name: str) -> bool:
    """The graph's own-work budget: every graph process but the world model, the simulated robot, the console,
    the launcher and the measuring process itself."""
    return name not in ("launcher", "this_probe") and not any(word in name for word in NOT_BUDGETED)


class CanonicalProbe:
    """The independent subscriber: canonical frames (arrival - stamp), node status (the retarget node's output
    count: the /rynn/action rate), /rynn/action arrivals only with ``action_probe``."""

    def __init__(self, node, action_probe: bool = False):
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from rynn_teleop_msgs.msg import RobotAction, TeleopStatus
        from sensor_msgs.msg import Image

        self.ages: list[float] = []
        self.action_arrivals: list[float] = []
        self.action_counts: list[tuple[float, int]] = []  # (status stamp s, actions published so far)
        self.status: dict[str, object] = {}
        self.counters: dict[str, dict[str, str]] = {}  # per /diagnostics status: its rejected.*/dropped.* counters
        self.frames_seen = 0
        self.measuring = False
        # rclpy's usual depth: at 2 this probe's own queue dropped frames of a 4-frame block that came 16 ms apart
        node.create_subscription(Image, IMAGE_TOPIC, self._on_image,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        if action_probe:
            node.create_subscription(RobotAction, ACTION_TOPIC, self._on_action,
                                     QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
        node.create_subscription(TeleopStatus, STATUS_TOPIC, self._on_status, 20)
        node.create_subscription(DiagnosticArray, DIAGNOSTICS_TOPIC, self._on_diagnostics, 20)

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            self.counters[status.name] = {kv.key: kv.value for kv in status.values
                                          if kv.key.startswith(("rejected.", "dropped.")) or kv.key.endswith(".count")}

    def _on_status(self, msg) -> None:
        self.status[msg.source] = msg
        count = action_count(msg)
        if count is not None and self.measuring:
            self.action_counts.append(count)

    def _on_image(self, msg) -> None:
        arrived = time.time()
        self.frames_seen += 1
        if self.measuring:
            self.ages.append(arrived - (msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9))

    def _on_action(self, _msg) -> None:
        if self.measuring:
            self.action_arrivals.append(time.monotonic())

    def reset(self) -> None:
        self.ages, self.action_arrivals, self.action_counts = [], [], []


def spin_for(executor, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.02)


def call(executor, client, request, timeout: float = 30.0, or_none: bool = False):
    """The service's answer; exits naming the service when it is not there or does not answer within
    ``timeout``, or returns None then with ``or_none`` (a long run that must report what it saw)."""
    if not client.wait_for_service(timeout_sec=timeout):
        if or_none:
            return None
        sys.exit(f"service {client.srv_name} not available")
    future = client.call_async(request)
    end = time.monotonic() + timeout
    while not future.done() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
    if not future.done():
        if or_none:
            return None
        sys.exit(f"service {client.srv_name} did not answer")
    return future.result()


def published_frames(probe: CanonicalProbe) -> int:
    """The world model's count of frames it published (its status' outputs), as of its last status."""
    return getattr(probe.status.get("world_model_node"), "outputs", 0)


def relayed_frames(probe: CanonicalProbe) -> int:
    """The bridge's count of camera frames it forwarded (its camera_relay stage), as of its last status."""
    return int(probe.counters.get("rynn_bridge", {}).get("camera_relay.count", 0))


def measure(label: str, probe: CanonicalProbe, executor, cpu: CpuMeter, options) -> dict:
    spin_for(executor, options.warmup)
    probe.reset()
    probe.measuring = True
    published_before, relayed_before = published_frames(probe), relayed_frames(probe)
    cpu.start()
    started = time.monotonic()
    spin_for(executor, options.seconds)
    elapsed = time.monotonic() - started
    probe.measuring = False
    return {"label": label, "seconds": elapsed, "ages": np.asarray(probe.ages), "actions": np.asarray(probe.action_arrivals),
            "action_rate": action_rate(probe.action_counts),
            "world_model_published": published_frames(probe) - published_before, "bridge_relayed": relayed_frames(probe) - relayed_before,
            "cpu": cpu.shares(), "status": dict(probe.status), "counters": dict(probe.counters)}


def action_count(status) -> tuple[float, int] | None:
    """(stamp s, /rynn/action messages published so far) from a /rynn/status message of the retarget node, else None."""
    if status.source != RETARGET_NODE:
        return None
    return status.header.stamp.sec + status.header.stamp.nanosec * 1e-9, status.outputs


def action_rate(counts: list[tuple[float, int]]) -> float:
    """Actions a second between the first and last retarget status of a window (nan with fewer than two)."""
    if len(counts) < 2 or counts[-1][0] <= counts[0][0]:
        return float("nan")
    return (counts[-1][1] - counts[0][1]) / (counts[-1][0] - counts[0][0])


def report(window: dict) -> None:
    ages, seconds = window["ages"] * 1e3, window["seconds"]
    print(f"\n== {window['label']} mode, {seconds:.1f} s measured")
    if ages.size:
        print(f"  canonical image: {ages.size / seconds:5.1f} FPS; frame age p50 {np.percentile(ages, 50):6.1f} ms, "
              f"p99 {np.percentile(ages, 99):6.1f} ms, max {ages.max():6.1f} ms (n={ages.size})")
    else:
        print("  canonical image: NO FRAMES")
    print(f"  /rynn/action published: {window['action_rate']:5.0f} Hz (the retarget node's status count)")
    arrivals = np.diff(window["actions"])
    if arrivals.size:
        deviation = np.abs(arrivals - 0.005) * 1e3
        print(f"  /rynn/action here: {1 / arrivals.mean():5.0f} Hz, |period - 5 ms| p50 {np.percentile(deviation, 50):.2f} "
              f"p99 {np.percentile(deviation, 99):.2f} ms, max gap {arrivals.max() * 1e3:.1f} ms")
    bridge = window["status"].get("rynn_bridge")
    for entry in getattr(bridge, "latencies", []):
        if entry.stage == "command_period":
            print(f"  bridge LCM command cycle period p50 {entry.p50 * 1e3:.2f}  p99 {entry.p99 * 1e3:.2f} ms")
    counters = {key: value for key, value in window["counters"].get("rynn_bridge", {}).items()
                if "camera" in key and key.startswith(("rejected.", "dropped.")) and value != "0"}
    print(f"  bridge camera rejections so far: {counters or 'none'}")
    world = window["status"].get("world_model_node")
    if world is not None:
        print(f"  world model published {window['world_model_published'] / seconds:5.1f} FPS, the bridge relayed "
              f"{window['bridge_relayed'] / seconds:5.1f} FPS (their status counts)")
        stages = ", ".join(f"{entry.stage} p50 {entry.p50 * 1e3:.0f}" for entry in world.latencies)
        print(f"  world model (its status): {stages} ms; dropped inputs {world.dropped_inputs}")
        drops = next((c for name, c in window["counters"].items() if name.startswith("world_model_node")), {})
        drops = {key: value for key, value in drops.items() if key.startswith("dropped.") and value != "0"}
        print(f"  world model drops so far: {', '.join(f'{k} {v}' for k, v in drops.items()) or 'none'}")
    print("  CPU, % of one core:")
    budgeted = 0.0
    for name, share in sorted(window["cpu"].items(), key=lambda item: -item[1]):
        counted = is_budgeted(name)
        budgeted += share if counted else 0.0
        print(f"    {name:28s} {share:6.1f}{'' if counted else '   (not budgeted)'}")
    print(f"    {'total':28s} {sum(window['cpu'].values()):6.1f}")
    print(f"    {'operator+bridge+recorder+robot_state_publisher':48s} {budgeted:6.1f}  (budget: <= {BUDGET_PERCENT:g})")


def figures(window: dict) -> dict[str, float]:
    """One mode's headline figures: canonical FPS, frame age p50/p99 (ms), the bridge's command period p99 (ms),
    the /rynn/action rate, the budgeted CPU and the CPU left idle on this machine (% of one core)."""
    ages, seconds = window["ages"] * 1e3, window["seconds"]
    period = next((entry.p99 * 1e3 for entry in getattr(window["status"].get("rynn_bridge"), "latencies", [])
                   if entry.stage == "command_period"), float("nan"))
    cpu = window["cpu"]
    return {"fps": ages.size / seconds, "age_p50": float(np.percentile(ages, 50)) if ages.size else float("nan"),
            "age_p99": float(np.percentile(ages, 99)) if ages.size else float("nan"), "command_p99": period,
            "action_hz": window["action_rate"], "budgeted": sum(share for name, share in cpu.items() if is_budgeted(name)),
            "idle": 100.0 * (os.cpu_count() or 1) - sum(cpu.values())}


def summary(runs: list[list[dict]]) -> str:
    """Min / median / max over the runs of each mode's figures, one markdown table."""
    lines = ["| mode | figure | min | median | max |", "| --- | --- | --- | --- | --- |"]
    for index, label in enumerate(w["label"] for w in runs[0]):
        per_run = [figures(windows[index]) for windows in runs if len(windows) > index]
        for key in per_run[0]:
            values = np.array([f[key] for f in per_run])
            lines.append(f"| {label} | {key} | {values.min():.1f} | {np.median(values):.1f} | {values.max():.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arguments", nargs="*", metavar="name:=value", help="launch arguments for the graph")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per mode")
    parser.add_argument("--warmup", type=float, default=8.0, help="seconds after the graph is up / after a switch before measuring")
    parser.add_argument("--log-dir", help="keep the nodes' logs and the bag here (default: a temporary directory)")
    parser.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE",
                        help="override one node parameter, as rynn_launch --set (repeatable): compare settings")
    parser.add_argument("--runs", type=int, default=1, help="start the graph this many times; then min/median/max")
    parser.add_argument("--digital-only", action="store_true", help="measure digital mode only (comparing world models)")
    parser.add_argument("--json", type=Path, help="also write each run's figures and CPU shares here")
    parser.add_argument("--action-probe", action="store_true",
                        help="also subscribe to /rynn/action here (inter-arrival jitter; one more reader of the 200 Hz stream)")
    options = parser.parse_args()
    runs = [run_once(options) for _ in range(options.runs)]
    if options.runs > 1:
        print(f"\n== {options.runs} runs (fps; ages and command period in ms; action_hz: /rynn/action published; "
              f"budgeted and idle CPU in % of one core; budget <= {BUDGET_PERCENT:g})\n{summary(runs)}")
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps({
            "arguments": options.arguments, "set": options.set, "action_probe": options.action_probe,
            "seconds": options.seconds, "machine": machine_info(),
            "runs": [[{"mode": w["label"], **figures(w), "cpu": w["cpu"]} for w in windows] for windows in runs]}, indent=1))
        print(f"figures written to {options.json}")


def run_once(options) -> list[dict]:
    """Start the graph, record an episode, measure digital then real mode, report; the measured windows."""
    import rclpy
    from rclpy.experimental import EventsExecutor
    from rynn_teleop_msgs.srv import SetMode
    from std_srvs.srv import Trigger

    with tempfile.TemporaryDirectory(prefix="bench_digital_") as tmp:
        log_dir = Path(options.log_dir or tmp)
        log_dir.mkdir(parents=True, exist_ok=True)
        command = launch_command(options.arguments, log_dir, options.set)
        print(f"graph: {' '.join(command[1:])}\nmachine: {machine_info()}", flush=True)
        launcher, output = start_graph(command, log_dir)
        processes = {name: int(pid) for name, pid in STARTED.findall(output.read_text())}  # the latest start of each
        processes["launcher"] = launcher.pid
        processes["this_probe"] = os.getpid()
        rclpy.init()
        node = rclpy.create_node("bench_digital_latency")
        executor = EventsExecutor()  # as the nodes spin: the probe's own CPU stays small beside the graph
        executor.add_node(node)
        windows = []
        try:
            probe = CanonicalProbe(node, options.action_probe)
            cpu = CpuMeter(processes)
            recording = call(executor, node.create_client(Trigger, RECORDER_SERVICES["start"]), Trigger.Request())
            print(f"recorder: {recording.message}", flush=True)
            deadline = time.monotonic() + 180
            while probe.frames_seen == 0 and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.1)
            if probe.frames_seen == 0:
                sys.exit(f"no canonical frames; see {output}")
            windows.append(measure("digital", probe, executor, cpu, options))
            if not options.digital_only:
                switched = call(executor, node.create_client(SetMode, SET_MODE_SERVICE), SetMode.Request(mode=SetMode.Request.MODE_REAL))
                print(f"set_mode real: {switched.success} {switched.message}", flush=True)
                windows.append(measure("real", probe, executor, cpu, options))
            call(executor, node.create_client(Trigger, RECORDER_SERVICES["stop"]), Trigger.Request())
        finally:
            node.destroy_node()
            rclpy.shutdown()
            launcher.send_signal(signal.SIGINT)
            launcher.wait(timeout=90)
        exits = [line for line in output.read_text().splitlines() if "exited" in line and "[rynn_launch]" in line]
        for window in windows:
            report(window)
        print("\n".join(["\nnode exits during the run:", *exits]) if exits else "\nno node exited during the run")
        print(f"\nprocesses: {', '.join(f'{name}={pid}' for name, pid in processes.items())}")
        print(f"machine at the end: {machine_info()}")
    return windows


if __name__ == "__main__":
    main()
