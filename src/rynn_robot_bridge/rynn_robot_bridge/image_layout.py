"""What a sensor_msgs/Image's fields must satisfy, and its header read straight from CDR bytes (ROS-free).

The bridge relays camera frames as the serialized bytes it received (no
deserialize/re-serialize of 900 kB per frame), so it reads the few fields its
checks need from the CDR encoding itself: stamp, frame id, size, encoding,
step and the data length. ``image_layout_problem`` is the one rule for
"step and data fit this size and encoding", used by the relay and by
``camera_messages.image_to_rgb``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

IMAGE_CHANNELS = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1}
CDR_LITTLE_ENDIAN, CDR_BIG_ENDIAN = b"\x00\x01", b"\x00\x00"  # XCDR1 encapsulation ids (what ROS 2 DDS uses)


def image_layout_problem(encoding: str, width: int, height: int, step: int, data_size: int) -> str | None:
    """Why these Image fields cannot hold a ``width`` x ``height`` ``encoding`` image, or None if they can.

    Rows are ``step`` bytes (at least width x channels; padding allowed) and there are
    exactly ``height`` of them, as sensor_msgs/Image defines ``data``.
    """
    channels = IMAGE_CHANNELS.get(encoding)
    if channels is None:
        return f"unsupported encoding {encoding!r} (supported: {', '.join(IMAGE_CHANNELS)})"
    if width <= 0 or height <= 0:
        return f"empty image {width}x{height}"
    if step < width * channels:
        return f"step {step} is shorter than a {width}-pixel {encoding} row ({width * channels} bytes)"
    if data_size != step * height:
        return f"{data_size} bytes of data for {height} rows of step {step} ({step * height} bytes)"
    return None


@dataclass(frozen=True)
class ImageHeader:
    """An Image without its pixels: what the camera relay checks."""

    stamp_ns: int
    frame_id: str
    width: int
    height: int
    encoding: str
    step: int
    data_size: int


class _CdrReader:
    """Sequential XCDR1 reads; alignment counts from the end of the 4-byte encapsulation header."""

    def __init__(self, raw: bytes):
        if len(raw) < 4 or raw[:2] not in (CDR_LITTLE_ENDIAN, CDR_BIG_ENDIAN):
            raise ValueError(f"not an XCDR1 message (encapsulation {raw[:4].hex() or 'missing'})")
        self.raw = memoryview(raw)
        self.order = "<" if raw[:2] == CDR_LITTLE_ENDIAN else ">"
        self.offset = 4

    def _take(self, size: int, align: int) -> memoryview:
        self.offset += -(self.offset - 4) % align
        end = self.offset + size
        if end > len(self.raw):
            raise ValueError(f"message ends at byte {len(self.raw)}, field needs bytes up to {end}")
        chunk, self.offset = self.raw[self.offset:end], end
        return chunk

    def uint32(self) -> int:
        return struct.unpack(self.order + "I", self._take(4, 4))[0]

    def int32(self) -> int:
        return struct.unpack(self.order + "i", self._take(4, 4))[0]

    def uint8(self) -> int:
        return self._take(1, 1)[0]

    def string(self) -> str:
        length = self.uint32()  # includes the terminating NUL
        text = bytes(self._take(length, 1))
        if length == 0 or text[-1] != 0:
            raise ValueError("string without its terminating NUL")
        return text[:-1].decode("utf-8", errors="replace")


def read_image_header(raw: bytes) -> ImageHeader:
    """The header fields of a serialized sensor_msgs/Image; ``ValueError`` if the bytes are not one."""
    reader = _CdrReader(raw)
    sec, nanosec = reader.int32(), reader.uint32()
    frame_id = reader.string()
    height, width = reader.uint32(), reader.uint32()
    encoding = reader.string()
    reader.uint8()  # is_bigendian
    step = reader.uint32()
    declared = reader.uint32()
    available = len(raw) - reader.offset
    if declared > available:
        raise ValueError(f"data declares {declared} bytes, message holds {available}")
    return ImageHeader(sec * 1_000_000_000 + nanosec, frame_id, width, height, encoding, step, declared)
