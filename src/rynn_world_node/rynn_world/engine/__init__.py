"""The data engine: recorded episodes (operator skeleton streams + actions) -> digital episodes.

``python -m rynn_world.engine --episodes DIR... --out DIR`` (docs/data_engine.md). The core
(``rynn_world.engine.core``) is ROS-free; the episodes go through the live node's streaming path
(StreamingWorldModel driven by ``evaluation.generation.stream_model``), several at once as a batch
of streams.
"""

from .core import (
    MANIFEST_NAME,
    PAPER_CHUNK_FRAMES,
    REFERENCE_POLICIES,
    DataEngine,
    EngineError,
    EngineSettings,
    ModelInfo,
    Reference,
    SourceEpisode,
    find_sources,
    read_manifest,
)

__all__ = [
    "MANIFEST_NAME", "PAPER_CHUNK_FRAMES", "REFERENCE_POLICIES", "DataEngine", "EngineError", "EngineSettings",
    "ModelInfo", "Reference", "SourceEpisode", "find_sources", "read_manifest",
]
