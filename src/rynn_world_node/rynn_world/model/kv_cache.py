"""Fixed-size KV cache for the causal student: reference sink + rolling window, written in place.

Layout per layer along the token axis: [current block | reference sink | ring of W blocks].
The current block comes first so the attended region is always one contiguous prefix (no mask,
no concatenation). Keys are stored unrotated; each step rotates them at re-indexed positions:
the sink at frame 0, the window frames at 1.. in age order, the current block right after.
While the stream is shorter than the window these are exactly the absolute positions, so the
stream equals a full-sequence block-causal forward; after that the positions stay bounded (the
sink never drifts away in RoPE distance), which keeps an unbounded stream in distribution. The
teacher-forced warm-up (training.causal.teacher_forcing_layout) reproduces this context exactly.
"""

import torch


def window_blocks_seen(block: int, window_blocks: int) -> range:
    """Indices of the earlier blocks (1-based; 0 is the reference sink) that block `block` attends
    to besides the sink: the last `window_blocks` of them, oldest first."""
    return range(max(1, block - window_blocks), block)


def stream_frame_positions(filled_blocks: int, block_frames: int, current_frames: int,
                           has_sink: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """RoPE frame positions of one causal step: (current block, attended keys).

    Keys are laid out [current block | sink | window blocks, oldest first]. Before the sink exists
    (the reference step) the current block sits at 0..; after it the sink is at 0, the
    `filled_blocks` window blocks at 1.. in age order and the current block right after them.
    This is the one place the window's position arithmetic lives: the serving cache, the
    training cache and the teacher-forced warm-up (training.causal) all take it from here.
    """
    if not has_sink:
        current = torch.arange(current_frames)
        return current, current
    start = 1 + filled_blocks * block_frames
    current = torch.arange(start, start + current_frames)
    window = 1 + torch.arange(filled_blocks * block_frames)
    return current, torch.cat([current, torch.zeros(1, dtype=torch.long), window])


class StreamCacheLayout:
    """What both caches share: the block geometry and the positions of the current block and of
    the attended prefix, all from stream_frame_positions. Subclasses keep the keys/values and
    say `has_sink` and `filled_blocks` (window blocks held)."""

    has_sink: bool
    filled_blocks: int

    def __init__(self, tokens_per_frame: int, block_frames: int, window_blocks: int):
        if block_frames < 1 or window_blocks < 1:
            raise ValueError(f"block_frames and window_blocks must be >= 1, got {block_frames}, {window_blocks}")
        self.tokens_per_frame = tokens_per_frame
        self.block_frames = block_frames
        self.window_blocks = window_blocks
        self.block_tokens = block_frames * tokens_per_frame

    def current_positions(self, num_frames: int | None = None) -> torch.Tensor:
        """Frame positions of the block being generated."""
        num_frames = self.block_frames if num_frames is None else num_frames
        return stream_frame_positions(self.filled_blocks, self.block_frames, num_frames, self.has_sink)[0]

    def attended_tokens(self, current_tokens: int) -> int:
        """Length of the contiguous prefix the current block attends to."""
        if not self.has_sink:
            return current_tokens
        return self.block_tokens + self.tokens_per_frame + self.filled_blocks * self.block_tokens

    def key_frame_positions(self, current_frames: int) -> torch.Tensor:
        """Frame position of every key in the attended prefix, window in age order."""
        if self.has_sink and current_frames != self.block_frames:
            raise ValueError(f"after the reference, blocks must have {self.block_frames} latent frames, got {current_frames}")
        return stream_frame_positions(self.filled_blocks, self.block_frames, current_frames, self.has_sink)[1]


class RollingKVCache(StreamCacheLayout):
    """Pre-allocated once; `storage` never changes size or address over a stream."""

    def __init__(
        self,
        num_layers: int,
        batch_size: int,
        heads: int,
        head_dim: int,
        tokens_per_frame: int,
        block_frames: int,
        window_blocks: int,
        device=None,
        dtype=torch.float32,
    ):
        super().__init__(tokens_per_frame, block_frames, window_blocks)
        self.capacity = self.block_tokens + tokens_per_frame + window_blocks * self.block_tokens
        self.storage = torch.zeros(num_layers, 2, batch_size, self.capacity, heads, head_dim, device=device, dtype=dtype)
        self.reset()

    @property
    def nbytes(self) -> int:
        return self.storage.numel() * self.storage.element_size()

    def reset(self) -> None:
        """Forget the stream (the buffer is kept and overwritten)."""
        self.has_sink = False
        self.filled_blocks = 0
        self.next_slot = 0  # ring slot the next committed block goes to (the oldest once full)

    def key_frame_positions(self, current_frames: int) -> torch.Tensor:
        """Frame position of every frame in the attended prefix, in storage (ring slot) order."""
        keys = super().key_frame_positions(current_frames)
        if not self.has_sink:
            return keys
        # the ring holds the window in slot order; positions are given by age (oldest first)
        oldest = self.next_slot if self.filled_blocks == self.window_blocks else 0
        ages = (torch.arange(self.filled_blocks) - oldest) % self.window_blocks
        by_age = keys[current_frames + 1:].view(self.filled_blocks, self.block_frames)
        return torch.cat([keys[: current_frames + 1], by_age[ages].flatten()])

    def write_current(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        n = k.shape[1]
        self.storage[layer, 0, :, :n].copy_(k)
        self.storage[layer, 1, :, :n].copy_(v)

    def prefix(self, layer: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.storage[layer, 0, :, :length], self.storage[layer, 1, :, :length]

    def commit(self) -> None:
        """Keep the current block: the first one becomes the sink, later ones enter the ring."""
        current = self.storage[:, :, :, : self.block_tokens]
        if not self.has_sink:
            sink = slice(self.block_tokens, self.block_tokens + self.tokens_per_frame)
            self.storage[:, :, :, sink].copy_(current[:, :, :, : self.tokens_per_frame])
            self.has_sink = True
            return
        start = self.block_tokens + self.tokens_per_frame + self.next_slot * self.block_tokens
        self.storage[:, :, :, start : start + self.block_tokens].copy_(current)
        self.next_slot = (self.next_slot + 1) % self.window_blocks
        self.filled_blocks = min(self.filled_blocks + 1, self.window_blocks)


class TrainingKVCache(StreamCacheLayout):
    """The RollingKVCache contract without in-place writes, for training rollouts with gradients.

    Committed keys/values stay autograd-connected to the blocks that produced them, so a loss on
    a later block reaches the earlier ones through the cache (gradients across chunks, paper Sec.
    3.5). Frame positions come from the same stream_frame_positions as RollingKVCache's, so a
    student trained here streams identically with the fixed-size cache.
    """

    def __init__(self, num_layers: int, tokens_per_frame: int, block_frames: int, window_blocks: int):
        super().__init__(tokens_per_frame, block_frames, window_blocks)
        self.num_layers = num_layers
        self.reset()

    def reset(self) -> None:
        self.sink: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        self.window: list[list[tuple[torch.Tensor, torch.Tensor]]] = []  # oldest first, each per layer
        self._current: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * self.num_layers

    @property
    def has_sink(self) -> bool:
        return self.sink is not None

    @property
    def filled_blocks(self) -> int:
        return len(self.window)

    def write_current(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        self._current[layer] = (k, v)

    def prefix(self, layer: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        parts = [self._current[layer]]
        if self.has_sink:
            parts += [self.sink[layer]] + [block[layer] for block in self.window]
        keys = torch.cat([k for k, _ in parts], dim=1)
        values = torch.cat([v for _, v in parts], dim=1)
        return keys[:, :length], values[:, :length]

    def commit(self) -> None:
        if not self.has_sink:
            self.sink = [(k[:, : self.tokens_per_frame], v[:, : self.tokens_per_frame]) for k, v in self._current]
            return
        self.window.append(list(self._current))
        if len(self.window) > self.window_blocks:
            self.window.pop(0)

