"""CDR bytes from the wire into a message: the one place where a malformed payload becomes a ``ValueError``.

Raw subscriptions (``raw=True``) get the bytes exactly as a publisher sent them; anyone on the
DDS domain can publish bytes no message serializes to. ``rclpy``'s ``deserialize_message``
then raises ``RMWError`` (a ``RuntimeError``), which a callback that lets it through turns into
the death of its node. Callers catch ``ValueError`` and count the message as rejected.
"""

from __future__ import annotations

from rclpy.serialization import deserialize_message


class MalformedMessage(ValueError):
    """Bytes that do not deserialize as the topic's type."""


def deserialize(raw: bytes, msg_type):
    try:
        return deserialize_message(raw, msg_type)
    except RuntimeError as error:  # rclpy's RMWError: Fast CDR could not read the bytes
        raise MalformedMessage(f"malformed {msg_type.__name__} ({len(raw)} bytes): {str(error).splitlines()[0]}") from None
