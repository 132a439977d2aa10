"""The one way every Rynn node process starts, spins and stops, alone or several in one process.

SIGINT/SIGTERM only set a flag: several nodes publish from their own threads
(200 Hz loops, LCM, rendering, generation), and those threads must be stopped
by ``destroy_node()`` before the rclpy context goes away. rclpy's own handler
would invalidate the context from inside the signal, and a KeyboardInterrupt
raised in rclpy's C++ calls surfaces as unrelated errors.

Single-threaded nodes spin on rclpy's Python SingleThreadedExecutor. rclpy's
experimental C++ EventsExecutor halved the operator nodes' CPU in
benchmarks/bench_retarget_loop.py (``--layouts events_executor``), but with it
test/test_retarget_over_dds.py failed intermittently (diagnostics counters stuck
short of the messages sent) where the Python executor never did, so it is not used.
``run_components`` puts several nodes in one process on one executor, as ROS 2
component containers do (the graph's ``containers``), so they share one
interpreter, one DDS participant and one executor instead of one each.
"""

from __future__ import annotations

import signal
import threading
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

SPIN_CHECK_S = 0.1  # how often the spin loop looks at the stop flag


def run_node(make_node: Callable[[], Node], args=None, threads: int = 1) -> None:
    """Create the node, spin it (``threads`` > 1: a multi-threaded executor) until a
    signal or an external shutdown, then destroy it and shut rclpy down."""
    run_components([make_node], args, threads)


def run_components(factories: list[Callable[[], Node]], args=None, threads: int = 1,
                   on_ready: Callable[[list[Node]], None] | None = None) -> None:
    """Create every node in order on one executor, call ``on_ready(nodes)``, spin until a
    signal or an external shutdown, then destroy them in reverse order and shut rclpy down."""
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    nodes: list[Node] = []
    executor = None
    try:
        executor = MultiThreadedExecutor(num_threads=threads) if threads > 1 else SingleThreadedExecutor()
        for make_node in factories:
            nodes.append(make_node())
            executor.add_node(nodes[-1])
        if on_ready is not None:
            on_ready(nodes)
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_CHECK_S)
    except ExternalShutdownException:
        pass
    finally:
        for node in reversed(nodes):
            if executor is not None:
                executor.remove_node(node)
            node.destroy_node()
        if executor is not None:
            executor.shutdown()
        rclpy.try_shutdown()
