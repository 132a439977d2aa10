"""The one way every Rynn node process starts, spins and stops.

SIGINT/SIGTERM only set a flag: several nodes publish from their own threads
(200 Hz loops, LCM, rendering, generation), and those threads must be stopped
by ``destroy_node()`` before the rclpy context goes away. rclpy's own handler
would invalidate the context from inside the signal, and a KeyboardInterrupt
raised in rclpy's C++ calls surfaces as unrelated errors.
"""

from __future__ import annotations

import signal
import threading
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions


def run_node(make_node: Callable[[], Node], args=None, threads: int = 1) -> None:
    """Create the node, spin it (``threads`` > 1: a multi-threaded executor) until a
    signal or an external shutdown, then destroy it and shut rclpy down."""
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    node = None
    try:
        node = make_node()
        executor = MultiThreadedExecutor(num_threads=threads) if threads > 1 else SingleThreadedExecutor()
        executor.add_node(node)
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
