"""The serving cache (RollingKVCache, fixed-size ring) and the training cache (TrainingKVCache,
autograd-connected lists) must hand the model the same keys at the same RoPE positions at every
step of a stream, also after the window wraps: otherwise a student trained through one streams
differently through the other."""

import pytest
import torch

from rynn_world.model.kv_cache import RollingKVCache, TrainingKVCache, stream_frame_positions, window_blocks_seen

LAYERS, TOKENS, HEADS, HEAD_DIM = 2, 3, 1, 2


def _block(step: int, frames: int) -> torch.Tensor:
    """Keys of one block whose every value names the step and token that wrote it."""
    tokens = frames * TOKENS
    return (1000 * step + torch.arange(tokens, dtype=torch.float32)).view(1, tokens, 1, 1).expand(1, tokens, HEADS, HEAD_DIM)


def _keys_by_position(cache, frames: int, layer: int) -> dict[int, list[float]]:
    """Position -> the key values stored for it (sorted), as the model's attention sees them."""
    length = cache.attended_tokens(frames * TOKENS)
    keys, _ = cache.prefix(layer, length)
    positions = cache.key_frame_positions(frames).repeat_interleave(TOKENS)
    assert positions.numel() == length
    seen: dict[int, list[float]] = {}
    for position, key in zip(positions.tolist(), keys[0, :, 0, 0].tolist(), strict=True):
        seen.setdefault(position, []).append(key)
    return {position: sorted(values) for position, values in seen.items()}


@pytest.mark.parametrize("block_frames,window_blocks", [(1, 3), (2, 2)])
def test_serving_and_training_caches_attend_alike_over_a_wrapping_stream(block_frames, window_blocks):
    rolling = RollingKVCache(LAYERS, 1, HEADS, HEAD_DIM, TOKENS, block_frames, window_blocks)
    training = TrainingKVCache(LAYERS, TOKENS, block_frames, window_blocks)
    for step in range(3 * window_blocks + 2):
        frames = 1 if step == 0 else block_frames
        k = _block(step, frames)
        for cache in (rolling, training):
            for layer in range(LAYERS):
                cache.write_current(layer, k + layer, k - layer)
        torch.testing.assert_close(rolling.current_positions(frames), training.current_positions(frames))
        assert rolling.attended_tokens(frames * TOKENS) == training.attended_tokens(frames * TOKENS)
        for layer in range(LAYERS):
            assert _keys_by_position(rolling, frames, layer) == _keys_by_position(training, frames, layer), \
                f"step {step}, layer {layer}"
        for cache in (rolling, training):
            cache.commit()
    assert rolling.filled_blocks == training.filled_blocks == window_blocks


def test_stream_positions_follow_the_window_rule():
    """The current block sits right after the sink and the blocks window_blocks_seen names."""
    block_frames, window_blocks = 2, 3
    for block in range(1, 9):
        seen = window_blocks_seen(block, window_blocks)
        current, keys = stream_frame_positions(len(seen), block_frames, block_frames)
        assert current.tolist() == list(range(1 + len(seen) * block_frames, 1 + (len(seen) + 1) * block_frames))
        assert keys.tolist() == current.tolist() + [0] + list(range(1, 1 + len(seen) * block_frames))
        assert len(seen) == min(block - 1, window_blocks)
