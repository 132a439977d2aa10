"""CPU share of the operator console with no browser and with one browser connected.

Starts the graph (real mode: the simulated robot's 640x480 camera is the canonical stream) with
its console, measures the console process's CPU time over a window with no browser connected,
then with one headless Chromium showing the page (and, for information, the browser's own CPU),
and prints both as a percentage of one core, with the camera rate the page reported next to the rate
an independent subscriber in this process counted on the canonical topic over the same window.

    .venv/bin/python benchmarks/bench_console.py [--seconds 30] [--idle-browser] [name:=value ...]

``--idle-browser`` runs the browser under SCHED_IDLE, as the README screenshot does (its software
WebGL then takes only the CPU the graph leaves); ``mode:=digital model_config:=embedded_cpu`` measures
the digital stream.

The issue's budget: <= 10 % of one core with one browser. On a shared machine the figures move
with the load; the load average is printed with them.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import threading
import time
from pathlib import Path

import psutil

from bench_digital_latency import CpuMeter, machine_info  # also sets up sys.path and the ROS environment
from rynn_world.console import headless_browser as browser
from rynn_world.console.graph_session import start_graph

CAMERA_CAPTION = re.compile(r"([\d.]+) FPS, frame age (\d+) ms")


def total_share(meter: CpuMeter) -> float:
    """Percent of one core the meter's processes used together since ``start()`` (exited ones left out)."""
    return sum(share for share in meter.shares().values() if share == share)


def browser_processes(driver) -> dict[str, int]:
    driver_process = psutil.Process(driver.service.process.pid)
    return {f"browser {process.pid}": process.pid for process in [driver_process, *driver_process.children(recursive=True)]}


class CanonicalFrameCounter:
    """Frames on the canonical camera topic as an independent subscriber takes them (every one: reliable, a
    second deep), spun on its own thread."""

    def __init__(self):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from sensor_msgs.msg import Image

        from rynn_common.qos import CAMERA_VIEW_QOS
        from rynn_common.ros_names import IMAGE_TOPIC

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("bench_console_counter", context=self.context)
        self.arrivals: list[float] = []
        self.node.create_subscription(Image, IMAGE_TOPIC, lambda _raw: self.arrivals.append(time.monotonic()),
                                      CAMERA_VIEW_QOS, raw=True)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def fps(self, start: float, end: float) -> float:
        return sum(start <= t < end for t in list(self.arrivals)) / (end - start)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measurement window per case")
    parser.add_argument("--idle-browser", action="store_true", help="the browser under SCHED_IDLE")
    args, graph_arguments = parser.parse_known_args()
    session = start_graph(["mode:=real", "model_config:=tiny", *graph_arguments],
                          Path(tempfile.mkdtemp(prefix="bench_console_")))
    console = {"console": session.console_pid}
    counter = CanonicalFrameCounter()
    try:
        time.sleep(5.0)  # past start-up (imports, URDF load)
        meter = CpuMeter(console)
        meter.start()
        time.sleep(args.seconds)
        idle = total_share(meter)
        driver = browser.start_browser(session.url, idle_priority=args.idle_browser)
        try:
            caption = browser.wait_for(lambda: CAMERA_CAPTION.search(browser.page_text(driver)), 300.0)
            if caption is None:
                raise RuntimeError(f"the page never showed the camera:\n{browser.page_text(driver)}")
            time.sleep(5.0)  # subscriptions made, first frames sent
            meter, chromium = CpuMeter(console), CpuMeter(browser_processes(driver))
            meter.start()
            chromium.start()
            window_start = time.monotonic()
            time.sleep(args.seconds)
            subscriber_fps = counter.fps(window_start, time.monotonic())
            with_browser, browser_cpu = total_share(meter), total_share(chromium)
            caption = CAMERA_CAPTION.search(browser.page_text(driver))
        finally:
            driver.quit()
    finally:
        counter.close()
        session.stop()
    print(f"machine: {machine_info()} (shared: other engineers' jobs run alongside)")
    print(f"graph: {' '.join(graph_arguments) or 'real mode, 640x480 simulated camera'}, console JPEG <= 15 FPS, "
          f"<= 640 px; window {args.seconds:.0f} s per case; browser {'SCHED_IDLE' if args.idle_browser else 'normal priority'}")
    print(f"console CPU, no browser connected : {idle:5.1f} % of one core")
    print(f"console CPU, one browser connected: {with_browser:5.1f} % of one core (budget 10 %)")
    print(f"  camera on the page: {caption.group(1)} FPS, frame age {caption.group(2)} ms" if caption else "")
    print(f"  canonical camera at an independent subscriber over the window: {subscriber_fps:.1f} FPS")
    print(f"  the browser itself (headless Chromium, software WebGL): {browser_cpu:5.1f} % of one core")


if __name__ == "__main__":
    main()
