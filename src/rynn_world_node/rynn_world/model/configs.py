"""Named model configurations: the full Wan2.2-TI2V-5B layout and small ones for tests and CPUs.

A config bundles the DiT and VAE constructor arguments with the streaming settings, so one name
("tiny", "embedded_cpu", "wan2.2-ti2v-5b") fixes everything the world model needs to run.
"""

from dataclasses import dataclass, field

from ..flow_matching import STUDENT_DENOISING_LIST

# Wan2.2-TI2V-5B transformer (diffusers layout, transformer/config.json of the official release).
WAN22_TI2V_5B_TRANSFORMER = dict(
    patch_size=(1, 2, 2),
    num_attention_heads=24,
    attention_head_dim=128,  # dim 3072 = 24 x 128
    in_channels=48,
    out_channels=48,
    text_dim=4096,
    freq_dim=256,
    ffn_dim=14336,
    num_layers=30,
    cross_attn_norm=True,
    qk_norm="rms_norm_across_heads",
    eps=1e-6,
    rope_max_seq_len=1024,
)

# Wan2.2 VAE (vae/config.json): 16x spatial (8x down + 2x2 patchify), 4x temporal, 48 channels.
# latents_mean / latents_std come from the checkpoint's config when loaded from disk.
WAN22_VAE = dict(
    base_dim=160,
    decoder_base_dim=256,
    z_dim=48,
    dim_mult=[1, 2, 4, 4],
    num_res_blocks=2,
    temperal_downsample=[False, True, True],
    is_residual=True,
    in_channels=12,
    out_channels=12,
    patch_size=2,
    scale_factor_temporal=4,
    scale_factor_spatial=16,
)


@dataclass(frozen=True)
class WorldModelConfig:
    """Everything needed to build and stream one world model."""

    name: str
    transformer: dict
    vae: dict
    height: int  # output video size in pixels
    width: int
    fps: float = 16.0  # the model's video frame rate (Wan2.2 TI2V trains at 16 FPS here)
    block_frames: int = 1  # latent frames generated per causal block (k)
    window_blocks: int = 4  # blocks kept in the rolling KV window besides the reference sink
    shift: float = 5.0
    denoising_list: tuple[int, ...] = STUDENT_DENOISING_LIST
    null_text_tokens: int = 16
    transformer_extra: dict = field(default_factory=dict)
    # Reference compositing for a camera that does not move (rynn_world.compositing): the model's pixels
    # are kept within this many pixels of the control skeleton, the reference's elsewhere; None: off.
    composite_radius_px: int | None = None
    composite_feather_px: float = 3.0  # half the width of the linear seam centred on the radius

    @property
    def latent_channels(self) -> int:
        return self.vae["z_dim"]

    @property
    def spatial_compression(self) -> int:
        return self.vae["scale_factor_spatial"]

    @property
    def temporal_compression(self) -> int:
        return self.vae.get("scale_factor_temporal", 4)

    @property
    def latent_size(self) -> tuple[int, int]:
        return self.height // self.spatial_compression, self.width // self.spatial_compression


def _small_vae(base_dim: int, z_dim: int) -> dict:
    """A Wan2.2-style (residual, patchified) VAE with 8x spatial and 4x temporal compression."""
    return dict(
        base_dim=base_dim,
        z_dim=z_dim,
        dim_mult=[1, 2, 2],
        num_res_blocks=1,
        temperal_downsample=[True, True],
        is_residual=True,
        in_channels=12,
        out_channels=12,
        patch_size=2,
        scale_factor_temporal=4,
        scale_factor_spatial=8,
        latents_mean=[0.0] * z_dim,
        latents_std=[1.0] * z_dim,
    )


def _small_transformer(z_dim: int, heads: int, head_dim: int, layers: int, text_dim: int) -> dict:
    return dict(
        WAN22_TI2V_5B_TRANSFORMER,
        num_attention_heads=heads,
        attention_head_dim=head_dim,
        in_channels=z_dim,
        out_channels=z_dim,
        text_dim=text_dim,
        freq_dim=32,
        ffn_dim=4 * heads * head_dim,
        num_layers=layers,
        rope_max_seq_len=64,
    )


CONFIGS = {
    "wan2.2-ti2v-5b": WorldModelConfig(
        name="wan2.2-ti2v-5b",
        transformer=WAN22_TI2V_5B_TRANSFORMER,
        vae=WAN22_VAE,
        height=480,
        width=832,
        null_text_tokens=512,
        composite_radius_px=32,  # embedded_cpu's, scaled to the width
        composite_feather_px=12.0,
    ),
    # Unit tests: seconds on one CPU core.
    "tiny": WorldModelConfig(
        name="tiny",
        transformer=_small_transformer(z_dim=8, heads=2, head_dim=12, layers=2, text_dim=16),
        vae=_small_vae(base_dim=8, z_dim=8),
        height=64,
        width=64,
        window_blocks=3,
        null_text_tokens=4,
    ),
    # The embedded CPU demo: streams >= 16 FPS at 128x208 on two cores (see benchmarks/). 32 latent
    # channels: at 16 this small VAE lost ~2 dB of reconstruction (held-out sim clips); a DiT width of
    # 128 carries a token's 2x2x32 latent values, and at these token counts costs little more than 64.
    "embedded_cpu": WorldModelConfig(
        name="embedded_cpu",
        transformer=_small_transformer(z_dim=32, heads=4, head_dim=32, layers=3, text_dim=64),
        vae=_small_vae(base_dim=8, z_dim=32),
        height=128,
        width=208,
        window_blocks=4,
        null_text_tokens=8,
        composite_radius_px=8,  # chosen on training-seed episodes (docs/world_model.md, "Reference compositing")
        composite_feather_px=3.0,
    ),
}


def get_config(name: str) -> WorldModelConfig:
    try:
        return CONFIGS[name]
    except KeyError:
        raise ValueError(f"unknown world-model config {name!r}; known: {sorted(CONFIGS)}") from None
