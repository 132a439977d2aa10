"""Flow-matching schedule, target and samplers on problems with a known exact answer."""

import pytest
import torch

from rynn_world import flow_matching as fm


def test_shift_schedule_matches_closed_form():
    assert fm.shift_sigma(0.5, 5.0) == pytest.approx(2.5 / 3.0)
    assert fm.shift_sigma(0.0, 5.0) == 0.0 and fm.shift_sigma(1.0, 5.0) == 1.0
    assert fm.shift_sigma(0.3, 1.0) == pytest.approx(0.3)
    sig = fm.teacher_sigmas(4, shift=3.0)
    assert sig[0] == 1.0 and sig[-1] == 0.0 and sig == sorted(sig, reverse=True)
    assert sig[2] == pytest.approx(3 * 0.5 / (1 + 2 * 0.5))


def test_student_sigmas_warp_the_denoising_list():
    sig = fm.student_sigmas([1000, 750, 500, 250], shift=5.0)
    expected = [1.0, 3.75 / 4.0, 2.5 / 3.0, 1.25 / 2.0, 0.0]
    assert sig == pytest.approx(expected)
    with pytest.raises(ValueError, match="decreasing"):
        fm.student_sigmas([250, 500])
    with pytest.raises(ValueError, match="decreasing"):
        fm.student_sigmas([1200, 500])


def test_velocity_target_and_x0_inverse():
    g = torch.Generator().manual_seed(0)
    x0, noise = torch.randn(2, 3, generator=g), torch.randn(2, 3, generator=g)
    xs = fm.add_noise(x0, noise, 0.3)
    v = fm.velocity_target(x0, noise)
    torch.testing.assert_close(fm.predict_x0(xs, v, 0.3), x0)


def _exact_velocity(x0):
    """The true velocity field for a point-mass data distribution at x0: v = (x - x0) / sigma."""
    return lambda x, t: (x - x0) / (t / fm.NUM_TRAIN_TIMESTEPS)


@pytest.mark.parametrize("sampler", ["euler", "unipc", "few_step", "few_step_deterministic"])
def test_samplers_reach_the_data_point(sampler):
    g = torch.Generator().manual_seed(1)
    x0, noise = torch.randn(4, 5, generator=g), torch.randn(4, 5, generator=g)
    velocity = _exact_velocity(x0)
    if sampler == "euler":
        out = fm.euler_sample(velocity, noise, fm.teacher_sigmas(6, shift=5.0))
    elif sampler == "unipc":
        out = fm.unipc_sample(velocity, noise, num_steps=6, shift=5.0)
    else:
        out = fm.few_step_sample(velocity, noise, fm.student_sigmas(), generator=g, renoise=sampler == "few_step")
    torch.testing.assert_close(out, x0, atol=1e-4, rtol=1e-4)


def test_reimpose_keeps_fixed_part():
    g = torch.Generator().manual_seed(2)
    x0, noise, ref = torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g), torch.randn(4, generator=g)

    def keep_first_row(x):
        x = x.clone()
        x[0] = ref
        return x

    out = fm.euler_sample(_exact_velocity(x0), noise, fm.teacher_sigmas(3, 2.0), reimpose=keep_first_row)
    torch.testing.assert_close(out[0], ref)
    torch.testing.assert_close(out[1:], x0[1:], atol=1e-5, rtol=1e-5)
