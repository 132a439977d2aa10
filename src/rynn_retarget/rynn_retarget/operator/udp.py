"""Live network ingest: one operator frame per UDP datagram, JSON (see operator.codec).

A vendor-side script (Manus/Vive SDK on the operator PC) sends datagrams to
``host:port`` (default 0.0.0.0:9870). Stamps are the sender's clock in
seconds and must increase. Malformed datagrams are counted and skipped.
``send_frame`` is the reference sender::

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    send_frame(sock, ("retarget-host", 9870), frame)
"""

from __future__ import annotations

import json
import socket
from typing import Iterator

from rynn_retarget.operator.codec import frame_from_dict, frame_to_dict
from rynn_retarget.operator.frame import OperatorFrame

DEFAULT_PORT = 9870
MAX_DATAGRAM = 65507


def send_frame(sock: socket.socket, address: tuple[str, int], frame: OperatorFrame) -> None:
    """Encode and send one frame (~2.5 kB, well under one datagram)."""
    sock.sendto(json.dumps(frame_to_dict(frame)).encode("utf-8"), address)


class UdpOperatorSource:
    """``OperatorSource`` listening on UDP; ``frames()`` yields until ``close``."""

    def __init__(self, host: str = "0.0.0.0", port: int = DEFAULT_PORT, poll_timeout_s: float = 0.1):
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind((host, port))
        self._socket.settimeout(poll_timeout_s)
        self.address = self._socket.getsockname()
        self.counters = {"received": 0, "malformed": 0}
        self._closed = False

    def frames(self) -> Iterator[OperatorFrame]:
        while not self._closed:
            try:
                payload, _ = self._socket.recvfrom(MAX_DATAGRAM)
            except socket.timeout:
                continue
            except OSError:
                return  # socket closed
            try:
                frame = frame_from_dict(json.loads(payload.decode("utf-8")))
            except (ValueError, UnicodeDecodeError):
                self.counters["malformed"] += 1
                continue
            self.counters["received"] += 1
            yield frame

    def close(self) -> None:
        self._closed = True
        self._socket.close()
