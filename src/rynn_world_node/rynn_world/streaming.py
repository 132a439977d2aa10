"""StreamingWorldModel: reference image + live hand skeletons in, generated RGB frames out.

Frame timing. The model runs on a fixed clock of `config.fps` (16) video frames per second.
Video frame 0 is the reference image (latent frame 0, paired with a black = "no action" skeleton).
Every later latent frame covers `temporal_compression` (4) video frames, so one step() consumes
4 * block_frames skeleton frames taken from the resampled clock and returns 4 * block_frames RGB
frames. Skeleton samples may arrive at any rate; the newest one at or before each tick is used.

Streams in a batch. ``batch_size`` B > 1 runs B independent streams in lockstep through the same
step (one batched encode, DiT block and decode): they share the frame clock and the re-anchor
schedule, and every per-frame input and output gains a leading stream axis (``reset`` and
``push_skeleton`` take B items, ``step`` returns (B, n, H, W, 3)). The offline data engine
(rynn_world.engine) uses it; the live node runs B = 1, whose inputs and outputs have no stream axis.
"""

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from . import flow_matching as fm
from .compositing import compositor_for
from .frame_clock import FrameClockResampler
from .image_input import to_model_rgb
from .model.causal import CausalStudentSampler
from .model.configs import WorldModelConfig
from .model.placement import place
from .model.tiny_decoder import StreamingTinyDecoder, TinyVideoDecoder
from .model.tiny_encoder import StreamingTinyControlEncoder, TinyControlEncoder
from .model.transformer import RynnWorldTransformer
from .model.vae import StreamingVAEDecoder, StreamingVAEEncoder, build_vae, rgb_to_tensor, tensor_to_rgb, use_vae_kernels
from .skeleton import CameraIntrinsics, ControlSample, SkeletonRenderer, SkeletonStyle, render_control

STAGES = ("render", "encode", "dit", "decode", "total")


@dataclass
class StageTimings:
    """Seconds spent per stage in the last step (`last`) and summed since reset (`total`)."""

    last: dict = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    total: dict = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    frames: int = 0

    def record(self, stage: str, seconds: float) -> None:
        self.last[stage] = seconds
        self.total[stage] += seconds

    def per_frame_ms(self) -> dict:
        return {k: 1000.0 * v / max(self.frames, 1) for k, v in self.total.items()}


class StreamingWorldModel:
    def __init__(
        self,
        config: WorldModelConfig,
        transformer: RynnWorldTransformer | None = None,
        vae=None,
        intrinsics: CameraIntrinsics | None = None,
        style: SkeletonStyle = SkeletonStyle(),
        text_embeds: torch.Tensor | None = None,
        device=None,
        dtype=torch.float32,
        seed: int = 0,
        reanchor_every: int | None = None,
        vae_kernels: str = "reference",
        tiny_decoder: TinyVideoDecoder | None = None,
        control_encoder: TinyControlEncoder | None = None,
        static_camera: bool = True,
        batch_size: int = 1,
    ):
        """Random weights are used when no transformer / vae is given (tests, benchmarks).

        vae_kernels: "reference" (diffusers' kernels) or "onednn" (CPU float32 only: ~4x faster
        VAE, outputs within float rounding; see model.vae.use_vae_kernels and the benchmark).
        tiny_decoder: decode the generated latents with this distilled decoder instead of the VAE's
        (model.tiny_decoder; the VAE still encodes the reference, and the skeletons unless control_encoder).
        control_encoder: encode the control frames (skeleton renders) with this distilled encoder instead
        of the VAE's (model.tiny_encoder); the VAE still encodes the reference image.
        static_camera: the camera does not move, so frames are composited on the reference
        (rynn_world.compositing) when the config sets a compositing radius; False for a moving camera.
        batch_size: independent streams stepped together (module docstring); 1 for the live node."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = int(batch_size)
        self.config = config
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.dtype = dtype
        torch.manual_seed(seed)
        if transformer is None:
            transformer = RynnWorldTransformer(**config.transformer, null_text_tokens=config.null_text_tokens)
        self.transformer = place(transformer, self.device, dtype).eval()
        self.vae = use_vae_kernels(place(build_vae(config.vae) if vae is None else vae, self.device, dtype).eval(), vae_kernels)
        self.renderer = None if intrinsics is None else SkeletonRenderer(intrinsics.scaled(config.width, config.height), style)
        self.text_embeds = None if text_embeds is None else text_embeds.to(self.device, dtype)
        self.frames_per_step = config.temporal_compression * config.block_frames
        self.reanchor_every = reanchor_every
        self.generator = torch.Generator(self.device).manual_seed(seed)
        self.sampler = CausalStudentSampler(
            self.transformer,
            config.latent_size,
            block_frames=config.block_frames,
            window_blocks=config.window_blocks,
            sigmas=fm.student_sigmas(config.denoising_list, config.shift),
            batch_size=self.batch_size,
            generator=self.generator,
        )
        self.encoder = (StreamingVAEEncoder(self.vae) if control_encoder is None
                        else StreamingTinyControlEncoder(place(control_encoder, self.device, dtype).eval()))
        self.decoder = (StreamingVAEDecoder(self.vae) if tiny_decoder is None
                        else StreamingTinyDecoder(place(tiny_decoder, self.device, dtype).eval()))
        self.compositors = [compositor_for(config, static_camera) for _ in range(self.batch_size)]  # one per stream
        self.compositor = self.compositors[0]
        self.resampler = FrameClockResampler(config.fps)
        self.timings = StageTimings()
        self._null_skeleton = np.zeros((config.height, config.width, 3), dtype=np.uint8)
        self._last_frame: np.ndarray | None = None  # (B, H, W, 3)
        self._chunk_frames = 0
        self._ready = False
        self.last_stamps: list[float] = []
        self.last_control: np.ndarray | None = None
        self.last_control_stamps: list[float] = []
        self.skipped_frames = 0

    # ---- stream control ---------------------------------------------------------------------

    def reset(self, reference_rgb=None, keep_clock: bool = False) -> None:
        """Start (or re-anchor) a stream on a reference image (any size; gray/RGBA converted);
        None re-anchors on the last generated frame.

        keep_clock: re-anchor mid-stream; the skeleton clock and queued samples carry on, so
        frame times stay continuous across the anchor.
        With batch_size B > 1, ``reference_rgb`` holds one image per stream (all streams re-anchor together).
        """
        if reference_rgb is None:
            if self._last_frame is None:
                raise RuntimeError("no frame to re-anchor on yet: pass a reference image")
            images = self._last_frame
        else:
            images = np.stack([to_model_rgb(image, self.config.height, self.config.width, "reference image")
                               for image in self._per_stream(reference_rgb, "reference images")])
        self.encoder.reset()
        self.decoder.reset()
        if not keep_clock:
            self.resampler.reset()
        with torch.no_grad():
            ref_latent = StreamingVAEEncoder(self.vae).push(self._to_tensor(images[:, None]))
            null_control = self.encoder.push(self._to_tensor(self._null_block(1)))
            text_embeds = self.text_embeds
            if text_embeds is not None and text_embeds.shape[0] != self.batch_size:
                text_embeds = text_embeds.expand(self.batch_size, *text_embeds.shape[1:])
            self.sampler.start(ref_latent, null_control, text_embeds)
            self.decoder.prime(ref_latent)  # the causal decoder's context: the reference frame
        for compositor, image in zip(self.compositors, images):
            if compositor is not None:
                compositor.reset(image)
        self.timings = StageTimings()
        self._last_frame = images
        self._chunk_frames = 1  # the reference is frame 0 of the chunk
        self._ready = True

    @property
    def reanchor_every(self) -> int | None:
        """Chunk length in frames, the reference included (None: never re-anchor by itself)."""
        return self._reanchor_every

    @reanchor_every.setter
    def reanchor_every(self, frames: int | None) -> None:
        if frames is not None and frames < 1 + self.frames_per_step:
            raise ValueError(f"reanchor_every must hold the reference and one block ({1 + self.frames_per_step} frames), got {frames}")
        self._reanchor_every = frames

    @property
    def reanchor_due(self) -> bool:
        """True when the next step would make the chunk (reference + generated frames) longer than
        ``reanchor_every``: 81 gives the paper's segments, the reference + 20 blocks of 4 frames."""
        return self.reanchor_every is not None and self._chunk_frames + self.frames_per_step > self.reanchor_every

    @property
    def last_frame(self) -> np.ndarray | None:
        """The newest frame of the stream (the reference right after a reset), HxWx3 uint8
        ((B, H, W, 3) for a batch of streams)."""
        return self._public(self._last_frame)

    @property
    def newest_skeleton_stamp(self) -> float | None:
        return self.resampler.newest_stamp

    def next_block_end(self) -> float | None:
        """The time the next step's last frame will represent (None before any skeleton); a live
        caller steps once a skeleton this new has arrived, so no frame claims a future time."""
        return self.resampler.next_block_end(self.frames_per_step)

    def push_skeleton(self, skeleton, stamp: float | None = None) -> None:
        """Queue one skeleton sample: a ControlSample (what the live node pushes), (2, 21, 3)
        camera-frame joints (both hands valid, no forearms) or an already rendered HxWx3 image;
        with batch_size B > 1, one such item per stream (all under one stamp).

        stamp: seconds on any monotonic clock; defaults to the arrival time.
        """
        if not self._ready:
            raise RuntimeError("StreamingWorldModel.reset(reference_rgb) must be called before push_skeleton()")
        stamp = time.monotonic() if stamp is None else float(stamp)
        items = [self._skeleton_item(item) for item in self._per_stream(skeleton, "skeletons")]
        self.resampler.push((items, stamp), stamp)

    def _skeleton_item(self, skeleton) -> tuple:
        if not isinstance(skeleton, ControlSample) and np.shape(skeleton) == (2, 21, 3):
            skeleton = ControlSample.from_joints(skeleton)
        if isinstance(skeleton, ControlSample):
            if self.renderer is None:
                raise ValueError("joint input needs camera intrinsics; pass intrinsics= or push rendered images")
            return ("control", skeleton)
        return ("image", to_model_rgb(np.asarray(skeleton), self.config.height, self.config.width, "skeleton image"))

    def step(self) -> np.ndarray:
        """Generate the next 4 * block_frames video frames, (n, H, W, 3) uint8 RGB ((B, n, H, W, 3)
        for a batch of streams).

        ``last_stamps`` then holds the time each frame represents (its skeleton's clock
        tick, on the stamps' clock), or is empty when no skeleton had arrived (null action);
        ``skipped_frames`` the ticks the clock skipped to catch up with the newest skeleton;
        ``last_control`` the control frames the step was conditioned on and
        ``last_control_stamps`` the stamp of the skeleton sample each was rendered from (empty
        for the null action).
        """
        if not self._ready:
            raise RuntimeError("StreamingWorldModel.reset(reference_rgb) must be called before step()")
        if self.reanchor_due:
            self.reset(keep_clock=True)
        start = time.perf_counter()
        samples = self.resampler.take(self.frames_per_step)
        skeletons = self._render(samples)  # (B, n, H, W, 3)
        self.last_control = self._public(skeletons)
        self.last_control_stamps = [] if samples is None else [stamp for _, stamp in samples]
        self.last_stamps = list(self.resampler.last_ticks)
        self.skipped_frames = self.resampler.last_skipped
        t_render = time.perf_counter()
        with torch.no_grad():
            control = self.encoder.push(self._to_tensor(skeletons))
            self._sync()
            t_encode = time.perf_counter()
            latents = self.sampler.next_block(control)
            self._sync()
            t_dit = time.perf_counter()
            decoded = self.decoder.push(latents)
            frames = np.stack([tensor_to_rgb(decoded[b : b + 1]) for b in range(self.batch_size)])
        for b, compositor in enumerate(self.compositors):  # timed as part of the decode stage
            if compositor is not None:
                frames[b] = compositor.apply(frames[b], skeletons[b])
        t_end = time.perf_counter()
        for stage, seconds in zip(STAGES, (t_render - start, t_encode - t_render, t_dit - t_encode, t_end - t_dit, t_end - start)):
            self.timings.record(stage, seconds)
        self.timings.frames += frames.shape[1]
        self._chunk_frames += frames.shape[1]
        self._last_frame = frames[:, -1]
        return self._public(frames)

    # ---- helpers ----------------------------------------------------------------------------

    def _render(self, samples) -> np.ndarray:
        """(B, n, H, W, 3) control frames of the taken samples (the null action when None)."""
        if samples is None:
            return self._null_block(self.frames_per_step)
        frames = np.empty((self.batch_size, len(samples), self.config.height, self.config.width, 3), dtype=np.uint8)
        for i, (items, _) in enumerate(samples):
            for b, (kind, sample) in enumerate(items):
                if kind == "image":
                    frames[b, i] = sample
                else:
                    render_control(self.renderer, sample.joints, sample.valid, sample.elbows, out=frames[b, i])
        return frames

    def _null_block(self, frames: int) -> np.ndarray:
        return np.broadcast_to(self._null_skeleton, (self.batch_size, frames, *self._null_skeleton.shape)).copy()

    def _to_tensor(self, frames: np.ndarray) -> torch.Tensor:
        """(B, T, H, W, 3) uint8 -> (B, 3, T, H, W) in [-1, 1] (rgb_to_tensor per stream)."""
        return torch.cat([rgb_to_tensor(stream, self.device, self.dtype) for stream in frames])

    def _per_stream(self, value, name: str) -> list:
        """The per-stream items of an input: the value itself for one stream, else B items."""
        if self.batch_size == 1:
            return [value]
        try:
            count = len(value)
        except TypeError:  # a scalar or a single object
            count = 0
        if count != self.batch_size:
            raise ValueError(f"{name}: expected one per stream ({self.batch_size}), got {count}")
        return list(value)

    def _public(self, value: np.ndarray | None) -> np.ndarray | None:
        """A (B, ...) per-stream array as callers see it: without the stream axis for one stream."""
        return value[0] if value is not None and self.batch_size == 1 else value

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    @property
    def kv_cache_bytes(self) -> int:
        return self.sampler.cache.nbytes
