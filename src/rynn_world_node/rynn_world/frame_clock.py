"""Resample irregularly arriving skeleton samples onto the model's fixed frame clock.

Each model frame takes the newest sample stamped at or before its tick (faster input is thinned,
slower input is held). If the block would end more than one frame period before the newest
sample, the clock jumps so the block ends on the newest sample instead of replaying stale ones
(``last_skipped`` says how many ticks were skipped): the teleop loop always acts on the newest.
"""

from collections import deque


class FrameClockResampler:
    def __init__(self, fps: float, max_samples: int = 256):
        if fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        self.period = 1.0 / fps
        self._samples: deque = deque(maxlen=max_samples)
        self._clock: float | None = None
        self.last_ticks: list[float] = []  # clock times of the frames the last take() returned
        self.last_skipped = 0  # model frames the last take() skipped to catch up with the input

    def reset(self) -> None:
        self._samples.clear()
        self._clock = None
        self.last_ticks = []
        self.last_skipped = 0

    def __len__(self) -> int:
        return len(self._samples)

    def push(self, sample, stamp: float) -> None:
        if self._samples and stamp < self._samples[-1][0]:
            raise ValueError(f"sample stamps must not go backwards: {stamp} after {self._samples[-1][0]}")
        self._samples.append((float(stamp), sample))

    def next_block_end(self, count: int) -> float | None:
        """Clock time of the last frame the next ``take(count)`` would return (None before any sample).

        A streaming caller waits until a sample at least this new has arrived, so no frame
        claims a time the input has not reached.
        """
        if not self._samples:
            return None
        newest = self._samples[-1][0]
        clock = self._samples[0][0] if self._clock is None else self._clock
        if newest - clock > count * self.period:
            return newest
        return clock + (count - 1) * self.period

    @property
    def newest_stamp(self) -> float | None:
        return self._samples[-1][0] if self._samples else None

    def take(self, count: int) -> list | None:
        """The samples for the next `count` model frames, or None when nothing has arrived yet."""
        self.last_skipped = 0
        if not self._samples:
            self.last_ticks = []
            return None
        newest = self._samples[-1][0]
        if self._clock is None:
            self._clock = self._samples[0][0]
        if newest - self._clock > count * self.period:  # behind: catch up so the block ends on the newest
            caught_up = newest - (count - 1) * self.period
            self.last_skipped = int((caught_up - self._clock) / self.period + 1e-6)
            self._clock = caught_up
        ticks = [self._clock + i * self.period for i in range(count)]
        self.last_ticks = ticks
        picked = [self._newest_at(t) for t in ticks]
        self._clock = ticks[-1] + self.period
        while len(self._samples) > 1 and self._samples[1][0] <= ticks[-1]:  # keep the held sample
            self._samples.popleft()
        return picked

    def _newest_at(self, tick: float):
        chosen = self._samples[0][1]
        for stamp, sample in self._samples:
            if stamp > tick + 1e-9:
                break
            chosen = sample
        return chosen
