"""The one way every Rynn node process starts, spins and stops, alone or several in one process.

SIGINT/SIGTERM only set a flag: several nodes publish from their own threads
(200 Hz loops, LCM, rendering, generation), and those threads must be stopped
by ``destroy_node()`` before the rclpy context goes away. rclpy's own handler
would invalidate the context from inside the signal, and a KeyboardInterrupt
raised in rclpy's C++ calls surfaces as unrelated errors.

Before rclpy starts, the process takes the packaged Fast DDS profile (rynn_common.dds_profile) and the
priority its launcher asked for (rynn_common.process_priority), and marks the shared-memory ports of
dead Fast DDS readers not ok (rynn_common.fastdds_shm): a respawned node gets its killed self's port,
and without that the running nodes would keep writing into the killed one's segment.

Nodes spin on rclpy's C++ EventsExecutor (``threads`` > 1: the Python
MultiThreadedExecutor): its wait and dispatch loop is C++, where the Python
executors rebuild a wait set in Python for every message. It installs its own
SIGINT/SIGTERM handlers when made; the runner puts its flag-setting ones back.
A node the graph launcher started stops when the launcher dies, however it dies
(rynn_common.process_link).
``run_components`` puts several nodes in one process on one executor, as ROS 2
component containers do (the graph's ``containers``), so they share one
interpreter, one DDS participant and one executor instead of one each; a topic one of them
publishes and another subscribes is delivered in-process (rynn_common.local_delivery).
"""

from __future__ import annotations

import signal
import threading
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from rynn_common.dds_profile import use_packaged_profile
from rynn_common.fastdds_shm import release_before_participant, release_note
from rynn_common.local_delivery import connect_local
from rynn_common.process_link import stop_with_launcher
from rynn_common.process_priority import lower_priority, requested_nice

SPIN_CHECK_S = 0.1  # how often the spin loop looks at the stop flag


def run_node(make_node: Callable[[], Node], args=None, threads: int = 1) -> None:
    """Create the node, spin it (``threads`` > 1: a multi-threaded executor) until a
    signal or an external shutdown, then destroy it and shut rclpy down."""
    run_components([make_node], args, threads)


def run_components(factories: list[Callable[[], Node]], args=None, threads: int = 1,
                   on_ready: Callable[[list[Node], list[str]], None] | None = None) -> None:
    """Create every node in order, link their in-process topics (``connect_local``), put them on one
    executor, call ``on_ready(nodes, linked topics)``, spin until a signal or an external shutdown,
    then destroy them in reverse order and shut rclpy down."""
    use_packaged_profile()  # before rclpy makes the participant
    released = release_before_participant()
    priority = lower_priority(requested_nice())
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()

    def stop_on_signals() -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())

    stop_on_signals()
    if stop_with_launcher():
        stop.set()
    nodes: list[Node] = []
    executor = None
    try:
        executor = MultiThreadedExecutor(num_threads=threads) if threads > 1 else EventsExecutor()
        stop_on_signals()  # again: the EventsExecutor replaced them with its own
        for make_node in factories:
            nodes.append(make_node())
        if priority:
            nodes[0].get_logger().info(f"process priority lowered: {', '.join(priority)}")
        marked, left = release_note(released)
        if marked:
            nodes[0].get_logger().warning(marked)
        if left:
            nodes[0].get_logger().info(left)
        linked = connect_local(nodes)  # before any of them spins: no DDS copy of an in-process message is taken unrecognised
        for node in nodes:
            executor.add_node(node)
        if on_ready is not None:
            on_ready(nodes, linked)
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
