"""World-model networks: the Wan2.2-TI2V-compatible DiT with control branch, KV cache, VAE streaming."""

from .configs import CONFIGS, WorldModelConfig, get_config
from .transformer import RynnWorldTransformer
from .weights import convert_original_wan_keys, load_transformer

__all__ = ["CONFIGS", "WorldModelConfig", "get_config", "RynnWorldTransformer", "convert_original_wan_keys",
           "load_transformer"]
