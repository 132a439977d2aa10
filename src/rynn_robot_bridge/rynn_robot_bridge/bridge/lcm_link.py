"""The bridge's LCM endpoint to the robot: numbered commands out, measured state in.

State arrives on a background thread; a packet that does not decode, or has the
wrong joint count, is counted and dropped, never passed on.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Callable

import lcm

from rynn_robot_bridge.bridge.commander import RobotCommand
from rynn_robot_bridge.lcm_protocol import MODE_HOLD, MODE_POSITION, NUM_JOINTS, MalformedPacket, RobotState, decode_state, encode_command


class LcmRobotLink:
    """``on_state(state, received_at)`` is called on the receive thread with ``time.monotonic()`` stamps."""

    def __init__(self, url: str, command_channel: str, state_channel: str, on_state: Callable[[RobotState, float], None]):
        self.url = url
        self.command_channel = command_channel
        self.state_channel = state_channel
        self.rejected: Counter = Counter()
        self.commands_sent = 0
        self._on_state = on_state
        self._lcm = lcm.LCM(url)
        self._subscription = self._lcm.subscribe(state_channel, self._handle_state)
        self._sequence = 0
        self._running = threading.Event()
        self._thread = threading.Thread(target=self._receive, name="lcm_state_receiver", daemon=True)

    def start(self) -> None:
        self._running.set()
        self._thread.start()

    def stop(self) -> None:
        self._running.clear()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)
        self._lcm.unsubscribe(self._subscription)

    def send(self, command: RobotCommand) -> None:
        """Publish one command with the next sequence number; a hold is enable=false, MODE_HOLD."""
        self._sequence += 1
        packet = encode_command(
            command.position,
            sequence=self._sequence,
            enable=not command.hold,
            mode=MODE_HOLD if command.hold else MODE_POSITION,
        )
        self._lcm.publish(self.command_channel, packet)
        self.commands_sent += 1

    def _receive(self) -> None:
        while self._running.is_set():
            self._lcm.handle_timeout(50)

    def _handle_state(self, _channel: str, data: bytes) -> None:
        received_at = time.monotonic()
        try:
            state = decode_state(data)
        except MalformedPacket:
            self.rejected["lcm_state_malformed"] += 1
            return
        if state.position.shape != (NUM_JOINTS,):
            self.rejected["lcm_state_wrong_length"] += 1
            return
        self._on_state(state, received_at)
