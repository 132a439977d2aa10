"""MP4 decoding with PyAV: frames and their presentation times, for resampling to 16 FPS."""

from pathlib import Path

import av
import numpy as np


def read_video(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(N, H, W, 3) uint8 RGB and (N,) seconds since the first frame."""
    frames, times = [], []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        for frame in container.decode(stream):
            frames.append(frame.to_ndarray(format="rgb24"))
            times.append(float(frame.pts * stream.time_base) if frame.pts is not None else len(times) / float(stream.average_rate))
    if not frames:
        raise ValueError(f"{path} has no video frames")
    times = np.asarray(times)
    return np.stack(frames), times - times[0]


def write_video(path: Path, frames: np.ndarray, fps: float) -> None:
    """(N, H, W, 3) uint8 RGB -> H.264 MP4 (even sizes padded, as the codec needs)."""
    frames = np.asarray(frames, dtype=np.uint8)
    pad_h, pad_w = frames.shape[1] % 2, frames.shape[2] % 2
    if pad_h or pad_w:
        frames = np.pad(frames, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)))
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=int(round(fps)))
        stream.width, stream.height, stream.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        for image in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
