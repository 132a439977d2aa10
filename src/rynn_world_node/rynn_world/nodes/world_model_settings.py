"""The world-model node's settings (config/world_model.yaml of rynn_world); every key is a parameter."""

from __future__ import annotations

from dataclasses import dataclass

from rynn_common.description import D435I_COLOR


@dataclass(frozen=True)
class WorldModelNodeSettings:
    model_config: str = "embedded_cpu"  # a name in rynn_world.model.configs
    checkpoint: str = ""  # empty: the packaged checkpoint of model_config, else random weights with a warning
    device: str = "auto"  # auto: cuda when available, else cpu
    torch_threads: int = 1  # intra-op threads; 1 leaves the other core to the graph (0 = torch's default)
    vae_kernels: str = "auto"  # auto: "onednn" on the CPU (float32), else "reference"
    seed: int = 0
    reference_image: str = ""  # an image file to anchor on before any real frame arrives
    reanchor_every: int = 81  # frames per chunk, the reference included
    follow_mode: bool = True  # stream only while /rynn/mode is "digital" (false: always)
    camera_width: int = D435I_COLOR.width
    camera_height: int = D435I_COLOR.height
    frame_id: str = "camera_color_optical_frame"
    skeleton_topic: str = "/rynn/operator/skeleton_camera"
    real_image_topic: str = "/rynn/real/camera/color/image_raw"
    image_topic: str = "/rynn/digital/camera/color/image_raw"
    camera_info_topic: str = "/rynn/digital/camera/color/camera_info"
    mode_topic: str = "/rynn/mode"
    status_rate_hz: float = 2.0
    skeleton_timeout_s: float = 0.5
    max_frame_age_s: float = 0.5  # a frame older than this when due is dropped (counted)
    publish_interval_s: float = 0.0  # between a block's frames; 0 = a quarter of a model period
