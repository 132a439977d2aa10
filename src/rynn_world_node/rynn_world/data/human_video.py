"""Shared machinery of the human-video readers: a list of (video, per-frame camera-frame hands)
recordings cut into clips at the model frame rate and rendered with the project's renderer."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..skeleton import CameraIntrinsics
from .clips import Clip, check_clip_frames, clip_starts, render_skeleton, resample_indices, resize_frames
from .video import read_video


@dataclass
class HandRecording:
    """Per video frame: both hands in the camera optical frame (x right, y down, z forward)."""

    joints_camera: np.ndarray  # (N, 2, 21, 3), MediaPipe order, [left, right]
    valid: np.ndarray  # (N, 2, 21) bool
    intrinsics: CameraIntrinsics  # of the video as stored
    elbows: np.ndarray | None = None  # (N, 2, 3) elbow (forearm bar to the wrist joint), camera frame


class HumanVideoDataset:
    """Base for EgoDex / VITRA readers: subclasses list `recordings` as (video path, task, loader)."""

    def __init__(self, recordings: list[tuple[Path, str, callable]], clip_frames: int, height: int, width: int,
                 fps: float = 16.0, stride: int | None = None):
        self.clip_frames = check_clip_frames(clip_frames)
        self.height, self.width, self.fps = height, width, fps
        self.stride = stride or clip_frames - 1
        self.recordings = recordings
        self._loaded: dict[int, tuple] = {}
        self.items = []
        for i in range(len(recordings)):
            frames, _, _ = self._load(i)
            self.items += [(i, s) for s in clip_starts(len(frames), self.clip_frames, self.stride)]
        self._loaded.clear()  # keep only what __getitem__ touches

    def _load(self, i: int):
        if i not in self._loaded:
            video, task, load_hands = self.recordings[i]
            raw, times = read_video(video)
            hands: HandRecording = load_hands()
            if len(hands.joints_camera) != len(raw):
                raise ValueError(f"{video}: {len(raw)} video frames but {len(hands.joints_camera)} annotated frames")
            pick = resample_indices(times, self.fps)
            frames = resize_frames(raw[pick], self.height, self.width)
            elbows = None if hands.elbows is None else hands.elbows[pick]
            skeleton = render_skeleton(hands.joints_camera[pick], hands.valid[pick], hands.intrinsics,
                                       self.height, self.width, elbows)
            self._loaded = {i: (frames, skeleton, task)}  # one recording at a time: videos are large
        return self._loaded[i]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Clip:
        i, start = self.items[index]
        frames, skeleton, task = self._load(i)
        window = slice(start, start + self.clip_frames)
        return Clip(reference=frames[start].copy(), frames=frames[window].copy(), skeleton=skeleton[window].copy(),
                    actions=None, task=task, source_id=f"{self.recordings[i][0].with_suffix('')}@{start}")
