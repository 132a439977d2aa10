"""The bridge's LCM endpoint to the robot: numbered commands out, measured state in.

State arrives on a background thread; a packet that does not decode, or has the
wrong joint count, is counted and dropped, never passed on (the commander then
validates the values).

Two queues stand between the robot and the handler, both sized for the state
stream plus bursts: the socket's receive buffer (``with_receive_buffer``: a
robot_state_t is ~1.4 KB on the wire and the kernel charges ~2.3 KB per queued
datagram, so 4 MiB holds ~1800 states: ~3.6 s of the 500 Hz stream if the
receive thread stalls, or ~0.4 s of a 5000 msg/s flood (2 MiB lost 96 of a
1000-packet burst arriving beside the live stream while the suite ran under two
busy processes); Linux caps the request
at ``net.core.rmem_max``, reported at start-up) and LCM's own queue per
subscription, 30 messages by default (``STATE_QUEUE_MESSAGES`` here). Either one
full drops packets unseen and uncounted.

``batch_interval_s`` > 0 takes the states in batches: after a state the thread takes every state queued
behind it, then sleeps that long, so a 500 Hz stream wakes it once a batch instead of once a state (the
bridge does so in digital mode, where the states only keep the real robot's pose current; the LCM library's
own receive thread queues them meanwhile). 0 takes each state as it comes.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import lcm

from rynn_robot_bridge.bridge.commander import RobotCommand
from rynn_robot_bridge.lcm_protocol import MODE_HOLD, MODE_POSITION, NUM_JOINTS, MalformedPacket, RobotState, decode_state, encode_command
from rynn_robot_bridge.robot_safety import ARRIVAL_JITTER_S

RMEM_MAX = Path("/proc/sys/net/core/rmem_max")
STATE_QUEUE_MESSAGES = 2000  # LCM's queue for the state subscription: what the 4 MiB socket buffer holds, and more


def with_receive_buffer(url: str, size_bytes: int) -> str:
    """``url`` with LCM's ``recv_buf_size`` option for a udpm URL that does not set one (others unchanged)."""
    if not url.startswith("udpm://") or size_bytes <= 0 or "recv_buf_size=" in url:
        return url
    return f"{url}{'&' if '?' in url else '?'}recv_buf_size={int(size_bytes)}"


def state_batch_interval_s(milliseconds: float) -> float:
    """``batch_interval_s`` for a setting in ms. A state of a batch is taken up to that much after it arrived, and
    the state validator allows ``ARRIVAL_JITTER_S`` of such lateness: at most half of it, the rest being left for
    a starved thread."""
    limit_ms = ARRIVAL_JITTER_S * 1e3 / 2
    if not 0.0 <= milliseconds <= limit_ms:
        raise ValueError(f"digital_state_batch_ms must be within 0 and {limit_ms:g} (half the state validator's "
                         f"{ARRIVAL_JITTER_S * 1e3:g} ms arrival slack), got {milliseconds:g}")
    return milliseconds / 1e3


def receive_buffer_note(url: str, rmem_max_path: Path = RMEM_MAX) -> str:
    """What receive buffer ``url`` asks for and whether the kernel grants it (for the start-up log)."""
    requested = next((int(v) for k, _, v in (o.partition("=") for o in url.partition("?")[2].split("&"))
                      if k == "recv_buf_size"), None)
    if requested is None:
        return "LCM receive buffer: the OS default (no recv_buf_size in the URL)"
    try:
        cap = int(rmem_max_path.read_text())
    except (OSError, ValueError):
        return f"LCM receive buffer: {requested} bytes requested (net.core.rmem_max unknown)"
    if cap < requested:
        return (f"LCM receive buffer: {requested} bytes requested but net.core.rmem_max caps it at {cap}; "
                f"bursts may be dropped by the kernel (raise it: sysctl -w net.core.rmem_max={requested})")
    return f"LCM receive buffer: {requested} bytes (net.core.rmem_max {cap})"


class LcmRobotLink:
    """``on_state(state, received_at)`` is called on the receive thread (``native_id``, known once ``start()``
    returned, e.g. to schedule it) with ``time.monotonic()`` stamps."""

    def __init__(self, url: str, command_channel: str, state_channel: str, on_state: Callable[[RobotState, float], None]):
        self.url = url
        self.command_channel = command_channel
        self.state_channel = state_channel
        self._rejected: Counter = Counter()
        self._rejected_lock = threading.Lock()  # the receive thread counts while the node's status timer reads
        self.commands_sent = 0
        self._on_state = on_state
        self._lcm = lcm.LCM(url)
        self._subscription = self._lcm.subscribe(state_channel, self._handle_state)
        self._subscription.set_queue_capacity(STATE_QUEUE_MESSAGES)
        self.native_id: int | None = None
        self.batch_interval_s = 0.0  # read by the receive thread at each batch
        self._started = threading.Event()
        self._running = threading.Event()
        self._thread = threading.Thread(target=self._receive, name="lcm_state_receiver", daemon=True)

    def start(self) -> None:
        self._running.set()
        self._thread.start()
        self._started.wait(timeout=1.0)  # `native_id` is set when start returns

    def stop(self) -> None:
        self._running.clear()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)
        self._lcm.unsubscribe(self._subscription)

    def send(self, command: RobotCommand) -> None:
        """Publish one command with its sequence number and utime; a hold is enable=false, MODE_HOLD."""
        packet = encode_command(
            command.position,
            sequence=command.sequence,
            utime=command.utime,
            enable=not command.hold,
            mode=MODE_HOLD if command.hold else MODE_POSITION,
        )
        self._lcm.publish(self.command_channel, packet)
        self.commands_sent += 1

    def rejected(self) -> dict[str, int]:
        """A copy of the reject counts, safe to read from any thread."""
        with self._rejected_lock:
            return dict(self._rejected)

    def _reject(self, reason: str) -> None:
        with self._rejected_lock:
            self._rejected[reason] += 1

    def _receive(self) -> None:
        self.native_id = threading.get_native_id()
        self._started.set()
        while self._running.is_set():
            if self._lcm.handle_timeout(50) > 0 and self.batch_interval_s > 0:
                while self._lcm.handle_timeout(0) > 0:  # the states queued behind it
                    pass
                time.sleep(self.batch_interval_s)

    def _handle_state(self, _channel: str, data: bytes) -> None:
        received_at = time.monotonic()
        try:
            state = decode_state(data)
        except MalformedPacket:
            self._reject("lcm_state_malformed")
            return
        if state.position.shape != (NUM_JOINTS,):
            self._reject("lcm_state_wrong_length")
            return
        self._on_state(state, received_at)
