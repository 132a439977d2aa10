"""Training data: readers that turn robot episodes and human egocentric video into paired clips.

Every reader yields `Clip`s (reference frame, RGB clip, depth-aware skeleton clip, action clip or
None, task) at the model's frame rate and resolution, so training never sees where a clip came from.
"""

from .clips import Clip, check_clip_frames
from .egodex import EgoDexDataset
from .latent_cache import LatentClipDataset, cache_latents
from .robot_episodes import RobotEpisodeDataset
from .vitra import VitraDataset

__all__ = ["Clip", "check_clip_frames", "EgoDexDataset", "RobotEpisodeDataset", "VitraDataset",
           "LatentClipDataset", "cache_latents"]
