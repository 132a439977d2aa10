"""The world-model node's settings (config/world_model.yaml of rynn_world); every key is a parameter."""

from __future__ import annotations

from dataclasses import dataclass

from rynn_common.description import D435I_COLOR
from rynn_common.ros_names import (
    CAMERA_FRAME,
    CAMERA_SKELETON_TOPIC,
    DIGITAL_CAMERA_INFO_TOPIC,
    DIGITAL_IMAGE_TOPIC,
    MODE_TOPIC,
    REAL_IMAGE_TOPIC,
)
from rynn_world.live_session import SessionSettings


@dataclass(frozen=True)
class WorldModelNodeSettings:
    model_config: str = "embedded_cpu"  # a name in rynn_world.model.configs
    checkpoint: str = ""  # empty: the packaged checkpoint of model_config, else random weights with a warning
    device: str = "auto"  # auto: cuda when available, else cpu
    torch_threads: int = 1  # intra-op threads; 1 leaves the other core to the graph (0 = torch's default)
    vae_kernels: str = "auto"  # auto: "onednn" on the CPU (float32), else "reference"
    decoder: str = "auto"  # auto: the checkpoint's distilled tiny decoder on the CPU, else the VAE's ("vae", "tiny")
    encoder: str = "auto"  # of the control frames: auto: the distilled tiny control encoder on the CPU, else the VAE ("vae", "tiny")
    static_camera: bool = True  # the camera is fixed: frames composited on the reference (rynn_world.compositing)
    seed: int = 0
    reference_image: str = ""  # an image file to anchor on before any real frame arrives
    reanchor_every: int = SessionSettings.reanchor_every or 0  # frames per chunk, the reference included; 0 = never (why: SessionSettings)
    follow_mode: bool = True  # stream only while /rynn/mode is "digital" (false: always)
    camera_width: int = D435I_COLOR.width
    camera_height: int = D435I_COLOR.height
    frame_id: str = CAMERA_FRAME
    skeleton_topic: str = CAMERA_SKELETON_TOPIC
    real_image_topic: str = REAL_IMAGE_TOPIC
    image_topic: str = DIGITAL_IMAGE_TOPIC
    camera_info_topic: str = DIGITAL_CAMERA_INFO_TOPIC
    mode_topic: str = MODE_TOPIC
    status_rate_hz: float = 2.0
    skeleton_timeout_s: float = 0.5
    max_frame_age_s: float = 1.0  # a frame older than this when due is dropped (counted; SessionSettings says why 1 s)
    publish_interval_s: float = 0.0  # between a block's frames; 0 = a quarter of a model period
    control_frame_topic: str = ""  # debug: publish each control frame (stamped with its skeleton's stamp); "" = off
