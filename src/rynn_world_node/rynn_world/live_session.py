"""LiveWorldSession: pacing, anchoring and frame scheduling of the live digital camera, without ROS.

It drives one StreamingWorldModel (which owns the frame clock and the re-anchor schedule) from
three kinds of callers:

- input callbacks (mode, real camera frame, skeleton) hand over their newest input under a short
  lock and return; they never wait for a generation step;
- one generation thread calls ``run_once`` (anchor or step) and ``wait_for_input`` in a loop;
- one publishing thread takes frames when due with ``wait_for_frame`` / ``pop_due``.

Anchoring: a real camera frame is a reference only when it shows the robot the operator commanded.
That holds at the real -> digital switch (until then the real robot executed the commands); after
it the bridge holds the real robot, so its camera shows the switch pose, and anchoring on it would
snap the picture back and undo the operator's motion. So the switch anchors on the newest real
frame and periodic re-anchors (``reanchor_every``) continue from the last generated frame, as
``StreamingWorldModel.step`` does by itself and evaluation (``stream_clip``) runs it. The bridge
has no mode in which the real robot follows the commands while the digital camera streams.

Everything is timed on one injected clock, the clock of the skeleton stamps (the node passes its
ROS clock, tests a fake one), so a frame's age is ``now - stamp``. That clock is the wall clock and
may step (rynn_common.clock_steps): given the monotonic clock too, the generation thread notices a
step back, drops what was timed on the old clock (queued skeletons, unpublished frames), restarts
the model's frame clock on the last generated frame and carries on. (A step forward needs
nothing: the frame clock skips ahead to the newest skeleton as after any late step.) A skeleton
stamped beyond ``max_skeleton_lead`` ahead of the clock is dropped: it would otherwise become the
frame clock's newest sample and every later one would look older.

Latest-wins, nothing queues: a real camera frame replaces the previous one unconverted (only the
frame an anchor uses is converted); skeletons wait only until the next step, where the model's
clock skips ahead to the newest one (skipped frames are counted, never generated); a new block
replaces any frame of the previous block not yet published; a frame older than ``max_frame_age``
when due is dropped. Drops are counted by reason in the shared PipelineStats.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from rynn_common.clock_steps import ClockStepDetector
from rynn_common.pipeline_stats import PipelineStats

from .streaming import StreamingWorldModel

IDLE_WAIT_S = 0.1  # how long the generation thread sleeps when nothing can happen without new input


@dataclass(frozen=True)
class SessionSettings:
    # Frames per chunk, the reference included (None: never re-anchor): the reference + 4 blocks of 4
    # (1 s at 16 FPS). Digital-mode re-anchors continue from the last generated frame (the real robot
    # holds; module docstring), so they cannot remove drift, only restart the context on the current
    # picture. Measured with the shipped model (benchmarks/bench_reanchor_policy.py --episodes 4, held-out
    # episodes, 61 frames, PSNR / SSIM against the executed episode): never 19.69 dB / 0.684 (falls from
    # 21.8 dB in the first second to 18.8 in the fourth), every 33 frames 20.01 / 0.734, every 17
    # 20.29 / 0.767 (copy-the-reference 17.95 / 0.740). The restart costs a visible step (2.0x an
    # ordinary frame change at 17, 2.8x at 33) and one reference encode a second.
    reanchor_every: int | None = 17
    skeleton_timeout: float = 0.5  # [s] without a skeleton the stream holds the last one, paced by the clock
    # [s] a frame older than this when due is dropped. A block's first frame is a block span (3 periods)
    # older than its last before the step starts, and a step in the running graph on two CPU cores takes
    # 250-400 ms: 0.5 s dropped 3 frames of 4 there. A new block replaces unpublished frames (nothing
    # queues), so this bound only catches a stalled stream.
    max_frame_age: float = 1.0
    publish_interval: float | None = None  # [s] between a block's frames; None: a quarter of a model period
    follow_mode: bool = True  # False: always digital
    max_skeleton_lead: float = 1.0  # [s] a skeleton stamped further ahead of the clock is dropped


@dataclass(frozen=True)
class LiveFrame:
    image: np.ndarray  # (H, W, 3) uint8 at the model's size
    stamp: float  # the time the frame represents (its skeleton's clock tick)
    due: float  # when to publish it


class LiveWorldSession:
    def __init__(
        self,
        model: StreamingWorldModel,
        stats: PipelineStats,
        settings: SessionSettings = SessionSettings(),
        clock: Callable[[], float] = time.time,
        convert_real_frame: Callable[[Any], np.ndarray] = np.asarray,
        file_reference: np.ndarray | None = None,
        warn: Callable[[str], None] = lambda message: None,
        on_control: Callable[[np.ndarray, list[float]], None] | None = None,
        monotonic: Callable[[], float] | None = None,
    ):
        """convert_real_frame turns what ``offer_real_frame`` was given (e.g. a ROS Image) into RGB,
        raising ValueError for a bad frame; it runs only for the frame an anchor uses. warn is
        told about each counted bad input. on_control, when given, gets each step's control frames
        and the stamps of the skeleton samples they were rendered from (the node's debug topic, which
        the parity test compares with the training reader's renders). monotonic, when given, is read
        with ``clock`` to notice steps of it (the node passes ``time.monotonic``)."""
        self.model = model
        self.stats = stats
        self.settings = settings
        self.clock = clock
        self.convert_real_frame = convert_real_frame
        self.file_reference = file_reference
        self.warn = warn
        self.on_control = on_control
        self.monotonic = monotonic
        self.clock_steps = ClockStepDetector()
        model.reanchor_every = settings.reanchor_every
        self.period = 1.0 / model.config.fps
        self.block_period = model.frames_per_step * self.period
        self.publish_interval = self.period / 4 if settings.publish_interval is None else settings.publish_interval

        self._input = threading.Condition()  # guards everything the input callbacks touch
        self._input_seq = 0  # bumped by every input, so the generation thread misses no wake-up
        self._seen_seq = 0
        self._mode: str | None = None if settings.follow_mode else "digital"
        self._epoch = 0 if settings.follow_mode else 1  # +1 each time digital mode starts
        self._real_frame: Any = None  # newest real camera frame, unconverted
        self._skeletons: deque = deque(maxlen=64)  # drained at every run_once
        self._skeleton_received = float("-inf")  # clock time of the newest skeleton

        self._anchored_epoch = 0  # generation thread only
        self._held_skeleton: tuple | None = None
        self._next_paced_step = float("-inf")
        self._converted_real: tuple[Any, np.ndarray] | None = None
        self.failed: Exception | None = None

        self._outbox_changed = threading.Condition()
        self._outbox: deque[LiveFrame] = deque()
        self._last_due = float("-inf")
        self._last_published_stamp = float("-inf")

    # ---- inputs (any thread; never wait for a step) -----------------------------------------

    @property
    def mode(self) -> str | None:
        return self._mode

    def set_mode(self, mode: str) -> bool:
        """Follow the bridge's mode; True when it changed. Leaving digital drops unpublished frames."""
        if not self.settings.follow_mode:
            return False
        with self._input:
            changed = mode != self._mode
            if changed and mode == "digital":
                self._epoch += 1  # anchor anew on the current real scene
            self._mode = mode
            self._wake()
        if mode != "digital":
            self._clear_outbox("mode_changed")
        return changed

    def offer_real_frame(self, frame: Any) -> None:
        with self._input:
            self._real_frame = frame

    def offer_skeleton(self, sample, stamp: float) -> None:
        """sample: a ControlSample (what the node decodes from each message) or anything
        ``StreamingWorldModel.push_skeleton`` takes."""
        with self._input:
            if len(self._skeletons) == self._skeletons.maxlen:
                self.stats.drop("skeleton_overflow")
            self._skeletons.append((sample, stamp))
            self._skeleton_received = self.clock()
            self._wake()

    def _wake(self) -> None:
        self._input_seq += 1
        self._input.notify_all()

    # ---- generation thread ----------------------------------------------------------------

    def wait_for_input(self, timeout: float) -> None:
        """Sleep up to ``timeout`` seconds, waking early on any input since the last run_once."""
        with self._input:
            self._input.wait_for(lambda: self._input_seq != self._seen_seq, timeout=max(timeout, 0.0))

    def run_once(self) -> float:
        """Anchor or generate one block if it is time; returns seconds until it is worth calling
        again (0: at once). A failing step sets ``failed``, reports a fault, stops the stream and
        re-raises."""
        if self.failed is not None:
            return IDLE_WAIT_S
        self._follow_clock_steps()
        with self._input:
            self._seen_seq = self._input_seq
            active, epoch = self._mode == "digital", self._epoch
            skeletons = list(self._skeletons)
            self._skeletons.clear()
            live = self.clock() - self._skeleton_received < self.settings.skeleton_timeout
        if skeletons:
            self._held_skeleton = skeletons[-1]
        if not active:
            return IDLE_WAIT_S
        if epoch != self._anchored_epoch:
            if not self._anchor_on_switch():
                return IDLE_WAIT_S
            self._anchored_epoch = epoch
            if not skeletons and self._held_skeleton is not None:
                skeletons = [self._held_skeleton]  # the anchor emptied the clock: start from the newest skeleton
        elif self.model.reanchor_due:
            with self.stats.timed("reanchor"):
                self.model.reset(keep_clock=True)  # the last generated frame, as step() would (see SessionSettings)
        self._push(skeletons)
        wait = self._wait_before_step(live)
        if wait > 0:
            return wait
        return self._step(epoch, live)

    def _follow_clock_steps(self) -> None:
        """Generation thread: after the clock stepped back, nothing timed on the old clock stays."""
        if self.monotonic is None:
            return
        step = self.clock_steps.step(self.clock(), self.monotonic())
        if step >= 0.0:
            return
        with self._input:
            stale_skeletons = len(self._skeletons)
            self._skeletons.clear()
            self._skeleton_received += step
        with self._outbox_changed:
            stale_frames = len(self._outbox)
            self._outbox.clear()
            self._last_due = self._last_published_stamp = float("-inf")
            self._outbox_changed.notify_all()
        self._next_paced_step = float("-inf")
        if stale_skeletons or stale_frames:
            self.stats.drop("clock_stepped_back", stale_skeletons + stale_frames)
        if self._held_skeleton is not None:
            sample, stamp = self._held_skeleton
            self._held_skeleton = (sample, stamp + step)
        if self.model.last_frame is not None:  # a stream runs: its frame clock starts again, on its last frame
            with self.stats.timed("reanchor"):
                self.model.reset(keep_clock=False)
            if self._held_skeleton is not None:
                self._push([self._held_skeleton])
        self.warn(f"the clock stepped back {-step:.3f} s: the digital stream restarts its frame clock")

    def _anchor_on_switch(self) -> bool:
        """Start a digital stream on the newest real frame (until the switch the real robot executed
        the commands, so its camera shows the commanded robot), else continue from the last generated
        frame or the file reference. The only place a real frame becomes a reference: after the
        switch the real robot holds its pose, and anchoring on it would undo the operator's motion."""
        reference = self._newest_real_rgb()
        if reference is None:
            reference = self.model.last_frame if self.model.last_frame is not None else self.file_reference
            if reference is None:
                self.stats.set_fault("no_reference", "no reference image: set reference_image or publish the real camera")
                return False
        self.stats.clear_fault("no_reference")
        with self.stats.timed("reanchor"):
            self.model.reset(reference, keep_clock=False)  # a new stream: its clock starts at the next skeleton
        return True

    def _newest_real_rgb(self) -> np.ndarray | None:
        with self._input:
            raw = self._real_frame
        if raw is None:
            return None
        if self._converted_real is not None and self._converted_real[0] is raw:
            return self._converted_real[1]
        try:
            rgb = self.convert_real_frame(raw)
        except ValueError as error:
            self.stats.reject("real_image")
            self.warn(f"ignoring a real camera frame: {error}")
            with self._input:
                if self._real_frame is raw:
                    self._real_frame = None
            return None
        self._converted_real = (raw, rgb)
        return rgb

    def _push(self, skeletons) -> None:
        latest = self.clock() + self.settings.max_skeleton_lead
        for sample, stamp in skeletons:
            if stamp > latest:
                self.stats.reject("skeleton_future_stamp")
                self.warn(f"dropped a skeleton stamped {stamp - latest + self.settings.max_skeleton_lead:.3f} s ahead")
                continue
            try:
                self.model.push_skeleton(sample, stamp)
            except ValueError as error:  # stamps going backwards, wrong shapes
                self.stats.drop("skeleton")
                self.warn(f"dropped a skeleton: {error}")

    def _wait_before_step(self, live: bool) -> float:
        """Live: step once the skeletons have reached the block's last frame time. Silent: hold
        the last skeleton and pace blocks by the clock, never in bursts."""
        now = self.clock()
        if live:
            block_end, newest = self.model.next_block_end(), self.model.newest_skeleton_stamp
            if block_end is None or block_end > newest:
                return IDLE_WAIT_S  # the next skeleton wakes the thread
            self._next_paced_step = now + self.block_period
            return 0.0
        if now < self._next_paced_step:
            return self._next_paced_step - now
        on_schedule = now - self._next_paced_step < self.block_period
        self._next_paced_step = (self._next_paced_step if on_schedule else now) + self.block_period
        return 0.0

    def _step(self, epoch: int, live: bool) -> float:
        try:
            with self.stats.timed("step"):
                frames = self.model.step()
        except Exception as error:  # reported; the caller stops the stream
            self.failed = error
            self.stats.set_fault("generation", f"world model failed: {error}")
            self._clear_outbox("generation_failed")
            raise
        if self.on_control is not None and self.model.last_control_stamps:
            self.on_control(self.model.last_control, self.model.last_control_stamps)
        for stage, seconds in self.model.timings.last.items():
            self.stats.record(stage, seconds)
        if self.model.skipped_frames:
            self.stats.drop("behind_realtime", self.model.skipped_frames)
        stamps = self.model.last_stamps
        if not (live and stamps):  # null action or held skeleton: the frames show "now"
            now = self.clock()
            stamps = [now - (len(frames) - 1 - i) * self.period for i in range(len(frames))]
        with self._input:
            current = self._mode == "digital" and self._epoch == epoch
        if not current:
            self.stats.drop("mode_changed_during_step", len(frames))
            return 0.0
        self._schedule(frames, stamps)
        return 0.0

    # ---- publishing thread ----------------------------------------------------------------

    def _schedule(self, frames: np.ndarray, stamps: list[float]) -> None:
        now = self.clock()
        with self._outbox_changed:
            if self._outbox:
                self.stats.drop("frame_superseded", len(self._outbox))
                self._outbox.clear()
            first = max(now, self._last_due + self.publish_interval)
            self._outbox.extend(LiveFrame(frame, stamp, first + i * self.publish_interval)
                                for i, (frame, stamp) in enumerate(zip(frames, stamps)))
            self._outbox_changed.notify_all()

    def _clear_outbox(self, reason: str) -> None:
        with self._outbox_changed:
            if self._outbox:
                self.stats.drop(reason, len(self._outbox))
                self._outbox.clear()
            self._outbox_changed.notify_all()

    def pop_due(self) -> LiveFrame | None:
        """The next frame due now, or None; frames less than a model period after the last
        published one (e.g. held-skeleton frames stamped "now" meeting the skeleton clock again),
        or older than ``max_frame_age``, are dropped on the way."""
        now = self.clock()
        with self._outbox_changed:
            while self._outbox and self._outbox[0].due <= now:
                frame = self._outbox.popleft()
                if frame.stamp < self._last_published_stamp + 0.99 * self.period:  # never faster than the model clock
                    self.stats.drop("frame_not_newer")
                    continue
                if now - frame.stamp > self.settings.max_frame_age:
                    self.stats.drop("frame_too_old")
                    continue
                self._last_due = frame.due
                self._last_published_stamp = frame.stamp
                self.stats.record("frame_age", now - frame.stamp)
                return frame
        return None

    def wait_for_frame(self, timeout: float) -> LiveFrame | None:
        """Block up to ``timeout`` seconds (real time) for a due frame."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self.pop_due()
            remaining = deadline - time.monotonic()
            if frame is not None or remaining <= 0:
                return frame
            with self._outbox_changed:
                wait = remaining if not self._outbox else min(remaining, max(self._outbox[0].due - self.clock(), 0.0))
                if wait > 0:
                    self._outbox_changed.wait(wait)
