"""CPU of every process of the default graph, as CPU-seconds per second and per 200 Hz command tick.

Starts the graph (rynn_world's teleop_graph.yaml) through the embedded launcher as bench_digital_latency.py does
(synthetic operator at its nominal rates, retarget, bridge, recorder recording an episode, world
model, simulated robot), waits ``--warmup`` seconds, then reads each process's user + system CPU time
over ``--seconds`` (bench_digital_latency's CpuMeter). On a shared, loaded machine wall-clock shares mislead: CPU-seconds a
process *used* per second it ran, and per message it handled, do not depend on how much other
work ran beside it (as long as the graph keeps its rates: the /rynn/action rate, from the retarget node's status
count, is printed; this process does not subscribe to the 200 Hz stream, as bench_digital_latency).

``--profile NAME`` also samples that process (e.g. ``operator``, ``rynn_recorder``) with py-spy
over the window (Python frames of running threads, without pausing the process) and prints the
functions with the most samples, by own time and by time including callees, and the CPU each of its
threads used (py-spy's samples also count threads that wait in a call it cannot see as idle, the
thread CPU times do not).

    .venv/bin/python benchmarks/bench_node_cpu.py [--seconds 20] [--warmup 8] [--profile operator] [name:=value ...]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_digital_latency import (
    BUDGET_PERCENT,
    STARTED,
    CpuMeter,
    action_count,
    action_rate,
    call,
    is_budgeted,
    launch_command,
    machine_info,
    start_graph,
)
from rynn_common.ros_names import RECORDER_SERVICES, STATUS_TOPIC


def start_profile(pid: int, seconds: float, output: Path) -> subprocess.Popen:
    py_spy = Path(sys.executable).with_name("py-spy")
    if not py_spy.exists():
        sys.exit("--profile needs py-spy: pip install -c requirements/constraints.txt -r requirements/benchmarks.txt")
    return subprocess.Popen([str(py_spy), "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "200",
                             "--format", "raw", "--threads", "--nonblocking", "--output", str(output)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def thread_seconds(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of the process, by OS thread id."""
    return {thread.id: thread.user_time + thread.system_time for thread in psutil.Process(pid).threads()}


def thread_names(pid: int) -> dict[int, str]:
    """OS thread id -> Python thread name (py-spy dump); threads Python did not start are named by /proc."""
    names = {}
    for tid in thread_seconds(pid):
        try:
            names[tid] = "native: " + Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
        except OSError:
            names[tid] = "native (exited)"
    dump = subprocess.run([str(Path(sys.executable).with_name("py-spy")), "dump", "--json", "--nonblocking", "--pid",
                           str(pid)], capture_output=True, text=True, timeout=60)
    for thread in json.loads(dump.stdout or "[]"):
        if thread.get("os_thread_id") is not None:
            names[thread["os_thread_id"]] = thread.get("thread_name") or f"python thread {thread['os_thread_id']}"
    return names


def print_threads(before: dict[int, float], after: dict[int, float], names: dict[int, str], elapsed: float) -> None:
    by_name = collections.Counter()
    for tid, seconds in after.items():
        by_name[names.get(tid, f"thread {tid}")] += seconds - before.get(tid, 0.0)
    print("  CPU per thread (% of a core):")
    for name, seconds in by_name.most_common():
        if seconds > 0:
            print(f"    {100 * seconds / elapsed:6.1f}  {name}")


def print_profile(raw: Path, top: int = 25) -> None:
    """Collapsed stacks (``frame;frame;... count``) -> the functions with most own and inclusive samples."""
    own, inclusive, threads = collections.Counter(), collections.Counter(), collections.Counter()
    total = 0
    for line in (raw.read_text() if raw.exists() else "").splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        samples = int(count)
        total += samples
        threads[frames[0]] += samples
        own[frames[-1]] += samples
        for frame in set(frames[1:]):
            inclusive[frame] += samples
    if not total:
        print("  profile: no samples (the process was idle or py-spy could not attach)")
        return
    print(f"  {total} samples; per thread: " + ", ".join(f"{name} {100 * n / total:.0f}%" for name, n in threads.most_common(6)))
    for title, counter in (("own time", own), ("including callees", inclusive)):
        print(f"  top functions by {title} (% of samples):")
        for frame, samples in counter.most_common(top):
            print(f"    {100 * samples / total:5.1f}  {frame[:150]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arguments", nargs="*", metavar="name:=value", help="launch arguments for the graph")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=8.0, help="seconds after recording starts before measuring")
    parser.add_argument("--profile", metavar="NAME", help="sample this graph process with py-spy over the window")
    options = parser.parse_args()

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rynn_teleop_msgs.msg import TeleopStatus
    from std_srvs.srv import Trigger

    with tempfile.TemporaryDirectory(prefix="bench_node_cpu_") as tmp:
        log_dir = Path(tmp)
        command = launch_command(options.arguments, log_dir)
        print(f"graph: {' '.join(command[1:])}\nmachine: {machine_info()}", flush=True)
        launcher, output = start_graph(command, log_dir)
        processes = {name: int(pid) for name, pid in STARTED.findall(output.read_text())}
        if options.profile and options.profile not in processes:
            sys.exit(f"--profile {options.profile}: not a graph process ({', '.join(processes)})")
        rclpy.init(args=[])  # the launch arguments on the command line are not ROS arguments
        node = rclpy.create_node("bench_node_cpu")
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        action_counts = []  # (stamp s, /rynn/action messages published so far), from the retarget node's status

        def on_status(msg) -> None:
            count = action_count(msg)
            if count is not None:
                action_counts.append(count)

        node.create_subscription(TeleopStatus, STATUS_TOPIC, on_status, 20)
        try:
            started = call(executor, node.create_client(Trigger, RECORDER_SERVICES["start"]), Trigger.Request())
            print(f"recorder: {started.message}", flush=True)
            end = time.monotonic() + options.warmup
            while time.monotonic() < end:
                executor.spin_once(timeout_sec=0.05)
            raw_profile = log_dir / "profile.txt"
            profiler = start_profile(processes[options.profile], options.seconds, raw_profile) if options.profile else None
            profiled = processes.get(options.profile)
            names = thread_names(profiled) if profiled else {}
            cpu = CpuMeter(processes)
            action_counts.clear()
            threads_before = thread_seconds(profiled) if profiled else {}
            cpu.start()
            window_end = time.monotonic() + options.seconds
            while time.monotonic() < window_end:
                executor.spin_once(timeout_sec=0.05)
            elapsed, used = cpu.used()
            rate = action_rate(action_counts)
            threads_after = thread_seconds(profiled) if profiled else {}
            call(executor, node.create_client(Trigger, RECORDER_SERVICES["stop"]), Trigger.Request())
            if profiler is not None:
                _, errors = profiler.communicate(timeout=options.seconds + 60)
                if profiler.returncode != 0:
                    print(f"py-spy failed: {errors.decode(errors='replace')[-500:]}")
        finally:
            node.destroy_node()
            rclpy.shutdown()
            launcher.send_signal(signal.SIGINT)
            launcher.wait(timeout=90)

        ticks = 0 if math.isnan(rate) else rate * elapsed  # nan: fewer than two retarget statuses
        print(f"\n{elapsed:.1f} s measured; /rynn/action published: {rate:.0f} Hz (nominal 200; the retarget node's status)")
        print(f"  {'process':26s} {'% of a core':>12s} {'CPU ms per 200 Hz tick':>24s}")
        budgeted = 0.0
        for name, seconds in sorted(used.items(), key=lambda item: -item[1]):
            counted = is_budgeted(name)
            budgeted += seconds if counted else 0.0
            per_tick = f"{1e3 * seconds / ticks:24.3f}" if ticks else f"{'n/a':>24s}"
            print(f"  {name:26s} {100 * seconds / elapsed:12.1f} {per_tick}{'' if counted else '   (not budgeted)'}")
        print(f"  {'operator+retarget+bridge+recorder+robot_state_publisher':26s} {100 * budgeted / elapsed:.1f} "
              f"% of a core (budget in digital mode while recording: <= {BUDGET_PERCENT:g})")
        if options.profile:
            print(f"\nprofile of {options.profile} (pid {processes[options.profile]}), py-spy, {options.seconds:g} s:")
            print_threads(threads_before, threads_after, names, elapsed)
            print_profile(raw_profile)
        print(f"machine at the end: {machine_info()}")


if __name__ == "__main__":
    main()
