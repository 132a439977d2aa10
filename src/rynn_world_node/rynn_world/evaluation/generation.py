"""Video generation for evaluation. The causal students run through StreamingWorldModel itself,
fed the clip's control frames one by one as the live node feeds skeletons (re-anchoring included),
so evaluation scores exactly what the live node serves; the bidirectional teacher (not a live path)
turns (reference latent, control latents) into frames through the same VAE decoder and the same
reference compositing (``compositing``) when the camera is static.
`method_video` is the one place that picks the path per method: the evaluation table and the
training curves both call it, so a curve's last point is the table's score."""

import numpy as np
import torch

from ..compositing import compositor_for
from ..data.clips import Clip
from ..model.configs import WorldModelConfig
from ..model.teacher import generate_bidirectional
from ..model.vae import StreamingVAEDecoder, tensor_to_rgb
from ..streaming import StreamingWorldModel


def decode(vae, latents: torch.Tensor) -> np.ndarray:
    """(1, C, F, h, w) latents -> (1 + 4 (F - 1), H, W, 3) uint8, as the streaming decoder emits them."""
    return tensor_to_rgb(StreamingVAEDecoder(vae).push(latents))


@torch.no_grad()
def teacher_latents(transformer, reference: torch.Tensor, control: torch.Tensor, steps: int, shift: float,
                    seed: int) -> torch.Tensor:
    generator = torch.Generator(reference.device).manual_seed(seed)
    return generate_bidirectional(transformer, reference, control, control.shape[2], num_steps=steps, shift=shift,
                                  sampler="euler", generator=generator)


def composite_clip(config: WorldModelConfig, reference: np.ndarray, control: np.ndarray, frames: np.ndarray,
                   static_camera: bool) -> np.ndarray:
    """Frames 1.. of a clip composited on its reference as StreamingWorldModel composites a stream
    (``control``: the clip's control frames 1..); unchanged without a static camera or a radius."""
    compositor = compositor_for(config, static_camera)
    if compositor is None:
        return frames
    compositor.reset(reference)
    return compositor.apply(frames, control)


def stream_clip(transformer, vae, config: WorldModelConfig, reference: np.ndarray, control: np.ndarray, seed: int,
                reanchor_every: int | None, anchor_frames: np.ndarray | None = None,
                static_camera: bool = True) -> np.ndarray:
    """Frames 1.. of a clip from a StreamingWorldModel of these weights (``stream_model``), re-anchoring every
    ``reanchor_every`` frames on the last generated frame, as the model does by itself and the live node
    does in digital mode (its real robot holds, so no real frame shows these actions)."""
    model = StreamingWorldModel(config, transformer=transformer, vae=vae, seed=seed, reanchor_every=reanchor_every,
                                static_camera=static_camera)
    return stream_model(model, reference, control, anchor_frames)


def stream_model(model: StreamingWorldModel, reference: np.ndarray, control: np.ndarray,
                 anchor_frames: np.ndarray | None = None) -> np.ndarray:
    """Frames 1.. of a clip from ``model`` as the live node drives it: reset on the reference (frame 0,
    null action), then control frame j (j >= 1) pushed at time j / fps, a step as soon as a block's last
    tick has arrived (as the live session steps, so the model clock never skips). The one driver of the
    live path for evaluation and for the tiny decoder's and encoder's distillation.

    anchor_frames: the real frames of an episode whose robot executed these controls (frame k at
    time k / fps); a due re-anchor then resets on the real frame at that instant instead, the
    paper's protocol. Only a replay of a real episode has such frames, never the live node.

    A model with batch_size B > 1 takes time-major batches: ``reference`` (B, H, W, 3), ``control`` and
    ``anchor_frames`` (T, B, H, W, 3); it returns (B, T - 1, H, W, 3) (the data engine's batches)."""
    model.reset(reference)
    frames, generated = [], 0
    for j in range(1, len(control)):
        model.push_skeleton(control[j], stamp=j / model.config.fps)
        if model.next_block_end() <= model.newest_skeleton_stamp + 1e-9:
            if anchor_frames is not None and model.reanchor_due:
                model.reset(anchor_frames[generated], keep_clock=True)
            frames.append(model.step())
            generated += len(frames[-1])
    if model.batch_size > 1:
        return np.concatenate(frames, axis=1)[:, : len(control) - 1]
    return np.concatenate(frames)[: len(control) - 1]


def method_video(method: str, transformer, vae, config: WorldModelConfig, clip: Clip, control: Clip, seed: int,
                 teacher_steps: int, reanchor_every: int | None, latents: dict | None = None,
                 control_latents: dict | None = None, static_camera: bool = True) -> np.ndarray:
    """Frames 1.. of `clip` as `method` (an evaluation method name) makes them from the clip's first
    frame, driven by `control`'s control frames: the clip's own, or another episode's to measure
    action grounding. The teacher samples in latent space, so it needs `latents` and
    `control_latents` (`encode_clip` of `clip` and of `control`); the students stream images.
    static_camera: composite on the reference (``compositing``), as the live node does for the robot's camera."""
    if method == "copy_reference":
        return np.repeat(clip.reference[None], len(clip.frames) - 1, axis=0)
    if method == "teacher":
        reference = latents["latents"][None][:, :, :1]
        frames = decode(vae, teacher_latents(transformer, reference, control_latents["control"][None], teacher_steps,
                                             config.shift, seed))[1:]
        return composite_clip(config, clip.reference, control.skeleton[1:], frames, static_camera)
    return stream_clip(transformer, vae, config, clip.reference, control.skeleton, seed, reanchor_every,
                       static_camera=static_camera)
