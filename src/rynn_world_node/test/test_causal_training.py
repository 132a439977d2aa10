"""The causal student's training path against its serving path, and distillation tests that fail
on a wrong implementation: teacher forcing == streaming with a wrapped window, gradients through
the rollout's KV cache, the DMD direction, control statistics untouched by rollouts and DMD."""

import pytest
import torch

from rynn_world import flow_matching as fm
from rynn_world.model.configs import get_config
from rynn_world.model.transformer import RynnWorldTransformer
from rynn_world.training.causal import causal_flow_matching_loss, student_rollout, teacher_forcing_layout
from rynn_world.training.losses import dmd_generator_loss, flow_matching_loss, observe_control_statistics

CFG = get_config("tiny")
C = CFG.latent_channels
H, W = CFG.latent_size
TOKENS = (H // 2) * (W // 2)


def _model(seed=0):
    torch.manual_seed(seed)
    model = RynnWorldTransformer(**CFG.transformer, null_text_tokens=CFG.null_text_tokens)
    with torch.no_grad():  # a live control branch, so the control reaches the output
        model.control_patch_embedding.weight.normal_(0, 0.1)
    return model


def _teacher_forced(model, latents, noisy, control, sigma, block_frames, window_blocks):
    """The warm-up's forward: [clean | noisy] with the teacher-forcing layout."""
    b, _, f = latents.shape[:3]
    x = torch.cat([latents, noisy], dim=2)
    timesteps = torch.cat([torch.zeros(b, f), (sigma * 1000)[:, None].expand(b, f - 1)], dim=1)
    positions, groups = teacher_forcing_layout(f, TOKENS, block_frames, window_blocks)
    return model(x, timesteps, control=torch.cat([control, control[:, :, 1:]], dim=2),
                 frame_positions=positions, attention_groups=groups)


@pytest.mark.parametrize("block_frames", [1, 2])
@torch.no_grad()
def test_teacher_forcing_equals_streaming_with_the_window_wrapping(block_frames):
    model = _model().eval()
    window, blocks = 2, 7  # the window wraps three times
    f = 1 + blocks * block_frames
    g = torch.Generator().manual_seed(1)
    latents, control = torch.randn(2, C, f, H, W, generator=g), torch.randn(2, C, f, H, W, generator=g)
    noisy = torch.randn(2, C, f - 1, H, W, generator=g)
    sigma = torch.tensor([0.7, 0.3])
    trained = _teacher_forced(model, latents, noisy, control, sigma, block_frames, window)

    cache = model.new_cache(2, TOKENS, block_frames, window)
    context = model.context_kv(model.embed_text(None, 2, latents.dtype))
    rope = model.rope_table(H // 2, W // 2, "cpu")
    reference = model.forward_cached(latents[:, :, :1], 0.0, cache, context, rope, control=control[:, :, :1], commit=True)
    torch.testing.assert_close(trained[:, :, :1], reference, atol=1e-5, rtol=1e-5)
    for start in range(1, f, block_frames):
        block = slice(start, start + block_frames)
        denoised = model.forward_cached(noisy[:, :, start - 1: start - 1 + block_frames], sigma * 1000, cache, context,
                                        rope, control=control[:, :, block])
        committed = model.forward_cached(latents[:, :, block], 0.0, cache, context, rope, control=control[:, :, block],
                                         commit=True)
        torch.testing.assert_close(trained[:, :, f - 1 + start: f - 1 + start + block_frames], denoised,
                                   atol=1e-5, rtol=1e-5, msg=lambda m, start=start: f"noisy block at frame {start}: {m}")
        torch.testing.assert_close(trained[:, :, block], committed, atol=1e-5, rtol=1e-5,
                                   msg=lambda m, start=start: f"clean block at frame {start}: {m}")

    # the window matters: attending to the whole past (the old teacher-forcing context) differs after it wraps
    whole_past = _teacher_forced(model, latents, noisy, control, sigma, block_frames, window_blocks=blocks)
    assert (whole_past - trained)[:, :, -block_frames:].abs().max() > 1e-3
    torch.testing.assert_close(whole_past[:, :, :1 + window * block_frames], trained[:, :, :1 + window * block_frames])


def test_teacher_forcing_layout_rejects_partial_blocks():
    with pytest.raises(ValueError, match="whole blocks of 2"):
        teacher_forcing_layout(4, TOKENS, 2, 3)


def test_rollout_gradients_reach_earlier_blocks_through_the_cache():
    model = _model().train()
    g = torch.Generator().manual_seed(2)
    reference = torch.randn(1, C, 1, H, W, generator=g).requires_grad_(True)
    control = torch.randn(1, C, 4, H, W, generator=g).requires_grad_(True)
    sample = student_rollout(model, reference, control, 4, fm.student_sigmas(), block_frames=1, window_blocks=3,
                             generator=torch.Generator().manual_seed(3))
    assert sample.shape == (1, C, 4, H, W)
    sample[:, :, -1].pow(2).sum().backward()  # a loss on the last block only
    per_frame = control.grad.abs().sum(dim=(0, 1, 3, 4))
    # blocks 1 and 2 reach the last block's output only through their committed keys/values
    assert per_frame[1] > 0 and per_frame[2] > 0 and per_frame[3] > 0
    assert reference.grad.abs().sum() > 0  # and the reference through the sink


@torch.no_grad()
def _stats(model):
    return {k: v.clone() for k, v in model.control_stats.state_dict().items()}


def test_rollouts_and_dmd_leave_the_control_statistics_and_a_warmup_step_updates_them():
    student, critic, teacher = _model(0).train(), _model(1).train(), _model(2).eval()
    for model in (student, critic, teacher):
        model.control_stats.control_mean.fill_(0.5), model.control_stats.control_std.fill_(0.3)
    before = {name: _stats(m) for name, m in (("student", student), ("critic", critic), ("teacher", teacher))}
    g = torch.Generator().manual_seed(4)
    latents = torch.randn(2, C, 5, H, W, generator=g)
    control = torch.randn(2, C, 5, H, W, generator=g) * 2 + 1
    sigma, noise = torch.tensor([0.5, 0.8]), torch.randn(2, C, 5, H, W, generator=g)
    for _ in range(3):  # critic updates on rollouts, then the generator's DMD step
        with torch.no_grad():
            sample = student_rollout(student, latents[:, :, :1], control, 5, fm.student_sigmas(), 1, 2, g)
        flow_matching_loss(critic, sample, control, sigma, noise).backward()
    sample = student_rollout(student, latents[:, :, :1], control, 5, fm.student_sigmas(), 1, 2, g)
    dmd_generator_loss(sample, control, teacher, critic, sigma, noise).backward()
    for name, model in (("student", student), ("critic", critic), ("teacher", teacher)):
        after = _stats(model)
        assert all(torch.equal(after[k], before[name][k]) for k in after), f"{name}'s statistics moved"

    observe_control_statistics(student, latents, control)  # what a warm-up / stage 1-2 step does first
    causal_flow_matching_loss(student, latents, control, sigma, noise, 1, 2).backward()
    stats = student.control_stats
    momentum = stats.momentum
    per_channel = control.transpose(0, 1).flatten(1)
    torch.testing.assert_close(stats.control_mean, 0.5 * (1 - momentum) + momentum * per_channel.mean(1))
    torch.testing.assert_close(stats.latent_mean, momentum * latents.transpose(0, 1).flatten(1).mean(1))


class GaussianVelocity(torch.nn.Module):
    """The exact flow-matching velocity for data ~ N(mean, 1) per element: a perfectly trained
    score model of that distribution (the frozen teacher, or the critic of the student's samples)."""

    def __init__(self, mean):
        super().__init__()
        self.mean = mean

    def forward(self, x, timesteps, control=None):
        s = (timesteps / fm.NUM_TRAIN_TIMESTEPS).view(x.shape[0], 1, -1, 1, 1)
        mean = torch.as_tensor(self.mean, dtype=x.dtype)
        x0 = mean + (1 - s) / ((1 - s) ** 2 + s**2) * (x - (1 - s) * mean)  # E[x0 | x_s]
        return (x - x0) / s.clamp_min(1e-6)  # v = (x - x0) / s; 0 for the clean reference frame


def _dmd_run(teacher_mean: float, swap_scores: bool, steps: int = 30) -> float:
    """Train a student whose samples are theta + N(0, 1) with the DMD generator loss; return theta."""
    theta = torch.nn.Parameter(torch.zeros(()))
    optimizer = torch.optim.SGD([theta], lr=0.5)
    g = torch.Generator().manual_seed(5)
    teacher = GaussianVelocity(teacher_mean)
    for _ in range(steps):
        z = torch.randn(8, 1, 5, 2, 2, generator=g)
        sample = torch.cat([torch.zeros(8, 1, 1, 2, 2), theta + z[:, :, 1:]], dim=2)  # frame 0: the reference
        critic = GaussianVelocity(float(theta.detach()))  # the ideal critic: the score of the student's own samples
        sigma = 0.02 + 0.96 * torch.rand(8, generator=g)
        noise = torch.randn(sample.shape, generator=g)
        real, fake = (critic, teacher) if swap_scores else (teacher, critic)
        optimizer.zero_grad()
        dmd_generator_loss(sample, None, real, fake, sigma, noise).backward()
        optimizer.step()
    return float(theta.detach())


def test_dmd_moves_the_student_towards_the_teacher_and_the_reversed_direction_does_not():
    teacher_mean = 2.0
    assert abs(_dmd_run(teacher_mean, swap_scores=False) - teacher_mean) < 0.2
    assert abs(_dmd_run(teacher_mean, swap_scores=True) - teacher_mean) > teacher_mean  # moved away from 0 -> 2
