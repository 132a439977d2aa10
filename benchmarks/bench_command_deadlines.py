"""The bridge's 200 Hz command loop in the default graph: its missed command deadlines, at start-up and after.

Starts src/rynn_world_node/config/teleop_graph.yaml through the embedded launcher (as bench_digital_latency
does: ``mode:=digital source:=synthetic``, recording), reads the bridge's ``/diagnostics`` from its first
report on, and prints its command-loop counters (missed command deadlines, loop periods skipped, commands
sent) and command period p99: at its first report, when the whole graph is up, after ``--seconds`` in
digital mode, then (unless ``--digital-only``) after ``--seconds`` more in real mode (``/rynn/set_mode``,
the simulated robot), with each counter's growth over the window.

    .venv/bin/python benchmarks/bench_command_deadlines.py [--seconds 60] [--digital-only] [--set NODE.PARAM=VALUE] [name:=value ...]

The machine line says how loaded the machine was: figures compare only between runs on the same machine.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_digital_latency import call, launch_command, machine_info, start_graph  # sources first on sys.path
from rynn_common.ros_names import DIAGNOSTICS_TOPIC, SET_MODE_SERVICE

BRIDGE = "rynn_bridge"
COMMAND_RATE_HZ = 200.0  # src/rynn_robot_bridge/config/robot.yaml
# The bridge's command-loop figures; the events exist since the bridge counts missed deadlines only while commanding.
LOOP_KEYS = ("dropped.command_deadlines_missed", "events.command_loop_periods_skipped", "events.commands_sent",
             "command_period.")


class BridgeReports:
    """The bridge's newest /diagnostics values, and when (monotonic) its first report arrived."""

    def __init__(self, node):
        from diagnostic_msgs.msg import DiagnosticArray

        from rynn_common.qos import REPORTS_QOS

        self.values: dict[str, str] = {}
        self.first_values: dict[str, str] = {}
        self.first_at: float | None = None
        self.lock = threading.Lock()
        node.create_subscription(DiagnosticArray, DIAGNOSTICS_TOPIC, self._on_diagnostics, REPORTS_QOS)

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            if status.name == BRIDGE:
                with self.lock:
                    self.values = {kv.key: kv.value for kv in status.values}
                    if self.first_at is None:
                        self.first_at, self.first_values = time.monotonic(), self.values

    def loop_figures(self, first: bool = False) -> dict[str, str]:
        with self.lock:
            return {key: value for key, value in sorted((self.first_values if first else self.values).items())
                    if key.startswith(LOOP_KEYS)}


def show(label: str, reports: BridgeReports, since_first_s: float | None, first: bool = False) -> dict[str, str]:
    figures = reports.loop_figures(first)
    when = "" if since_first_s is None else f" ({since_first_s:.1f} s after the bridge's first report)"
    print(f"\n== {label}{when}\n  " + ("\n  ".join(f"{key} {value}" for key, value in figures.items()) or "no report yet"),
          flush=True)
    return figures


def window(label: str, reports: BridgeReports, seconds: float) -> None:
    """The deadline counters' growth over ``seconds``, beside the periods those seconds hold."""
    before = reports.loop_figures()
    started = time.monotonic()
    time.sleep(seconds)  # the probe's executor spins in its own thread meanwhile
    after = show(f"{label}: after {seconds:g} s", reports, time.monotonic() - reports.first_at)
    elapsed = time.monotonic() - started
    grown = {key: int(value) - int(before.get(key, 0)) for key, value in after.items()
             if not key.startswith("command_period.") and value.isdigit()}
    for key, count in grown.items():
        print(f"  {key} grew by {count} in {elapsed:.1f} s ({count / (elapsed * COMMAND_RATE_HZ):.2%} of "
              f"{elapsed * COMMAND_RATE_HZ:.0f} periods)")
    missed, sent = grown.get("dropped.command_deadlines_missed", 0), grown.get("events.commands_sent")
    if sent is not None and missed + sent:
        print(f"  owed commands missed in the window: {missed} of {missed + sent} ({missed / (missed + sent):.2%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arguments", nargs="*", metavar="name:=value", help="launch arguments for the graph")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured seconds per mode")
    parser.add_argument("--digital-only", action="store_true", help="measure digital mode only")
    parser.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE",
                        help="override one node parameter, as rynn_launch --set (repeatable), e.g. "
                             "rynn_bridge.command_realtime_priority=0: a machine that refuses SCHED_FIFO")
    options = parser.parse_args()

    import rclpy
    from rclpy.experimental import EventsExecutor
    from rynn_teleop_msgs.srv import SetMode

    with tempfile.TemporaryDirectory(prefix="bench_deadlines_") as tmp:
        command = launch_command(options.arguments, Path(tmp), options.set)
        print(f"graph: {' '.join(command[1:])}\nmachine: {machine_info()}", flush=True)
        rclpy.init()
        node = rclpy.create_node("bench_command_deadlines")
        executor = EventsExecutor()
        executor.add_node(node)
        reports = BridgeReports(node)
        spinning = threading.Event()
        spinning.set()

        def spin() -> None:
            while spinning.is_set():
                executor.spin_once(timeout_sec=0.1)

        spinner = threading.Thread(target=spin, daemon=True)
        spinner.start()
        launcher, _ = start_graph(command, Path(tmp))
        try:
            while reports.first_at is None:  # the bridge reports at 2 Hz here (launch_command's override)
                time.sleep(0.1)
            show("the bridge's first report", reports, None, first=True)
            show("the whole graph up", reports, time.monotonic() - reports.first_at)
            window("digital mode", reports, options.seconds)
            if not options.digital_only:
                spinning.clear()
                spinner.join()
                answer = call(executor, node.create_client(SetMode, SET_MODE_SERVICE), SetMode.Request(mode=SetMode.Request.MODE_REAL))
                print(f"\nset_mode real: {answer.success} {answer.message}", flush=True)
                spinning.set()
                spinner = threading.Thread(target=spin, daemon=True)
                spinner.start()
                window("real mode", reports, options.seconds)
        finally:
            spinning.clear()
            spinner.join()
            node.destroy_node()
            rclpy.shutdown()
            launcher.send_signal(signal.SIGINT)
            launcher.wait(timeout=90)
        print(f"\nmachine at the end: {machine_info()}")


if __name__ == "__main__":
    sys.exit(main())
