"""Flow-matching pieces shared by training and inference (paper Eq. 1, 2, 4).

Convention (Wan / rectified flow): x_sigma = (1 - sigma) * x0 + sigma * noise, sigma in [0, 1],
the network predicts the velocity v = noise - x0 and takes the timestep 1000 * sigma. The shift
warps a uniform grid towards high noise, which high-resolution video needs.
"""

from collections.abc import Callable, Sequence

import torch

NUM_TRAIN_TIMESTEPS = 1000
STUDENT_DENOISING_LIST = (1000, 750, 500, 250)

VelocityFn = Callable[[torch.Tensor, float], torch.Tensor]  # (x at sigma, timestep = 1000 sigma) -> v
Reimpose = Callable[[torch.Tensor], torch.Tensor]  # puts fixed parts (the reference frame) back


def shift_sigma(sigma, shift: float):
    """Wan-style shift: sigma' = shift * s / (1 + (shift - 1) * s); shift 1 is the identity."""
    if shift <= 0:
        raise ValueError(f"shift must be positive, got {shift}")
    return shift * sigma / (1 + (shift - 1) * sigma)


def add_noise(x0: torch.Tensor, noise: torch.Tensor, sigma) -> torch.Tensor:
    """Point on the straight path between data (sigma 0) and noise (sigma 1)."""
    return (1 - sigma) * x0 + sigma * noise


def velocity_target(x0: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """Regression target of the flow-matching loss: v = noise - x0."""
    return noise - x0


def predict_x0(x: torch.Tensor, velocity: torch.Tensor, sigma) -> torch.Tensor:
    """Clean sample implied by a velocity prediction at noise level sigma."""
    return x - sigma * velocity


def teacher_sigmas(num_steps: int, shift: float) -> list[float]:
    """num_steps + 1 shifted sigmas from 1 down to 0 for the bidirectional teacher's Euler sampler."""
    if num_steps < 1:
        raise ValueError(f"num_steps must be >= 1, got {num_steps}")
    grid = torch.linspace(1.0, 0.0, num_steps + 1, dtype=torch.float64)
    return [float(shift_sigma(s, shift)) for s in grid]


def student_sigmas(denoising_list: Sequence[int] = STUDENT_DENOISING_LIST, shift: float = 5.0) -> list[float]:
    """The few-step student's sigmas: each listed timestep / 1000 warped by the shift, then 0."""
    steps = list(denoising_list)
    if not steps or any(not 0 < t <= NUM_TRAIN_TIMESTEPS for t in steps) or steps != sorted(steps, reverse=True):
        raise ValueError(f"denoising_list must be strictly decreasing timesteps in (0, 1000], got {steps}")
    if len(set(steps)) != len(steps):
        raise ValueError(f"denoising_list has repeated timesteps: {steps}")
    return [float(shift_sigma(t / NUM_TRAIN_TIMESTEPS, shift)) for t in steps] + [0.0]


def euler_sample(
    velocity_fn: VelocityFn, noise: torch.Tensor, sigmas: Sequence[float], reimpose: Reimpose | None = None
) -> torch.Tensor:
    """Deterministic Euler integration of the flow ODE from sigmas[0] to sigmas[-1]."""
    x = noise if reimpose is None else reimpose(noise)
    for sigma, sigma_next in zip(sigmas[:-1], sigmas[1:]):
        v = velocity_fn(x, sigma * NUM_TRAIN_TIMESTEPS)
        x = x + (sigma_next - sigma) * v
        if reimpose is not None:
            x = reimpose(x)
    return x


def unipc_sample(
    velocity_fn: VelocityFn, noise: torch.Tensor, num_steps: int, shift: float, reimpose: Reimpose | None = None
) -> torch.Tensor:
    """Multistep UniPC (the sampler Wan ships) via diffusers' scheduler in flow-sigma mode."""
    from diffusers import UniPCMultistepScheduler

    scheduler = UniPCMultistepScheduler(
        num_train_timesteps=NUM_TRAIN_TIMESTEPS,
        prediction_type="flow_prediction",
        use_flow_sigmas=True,
        flow_shift=shift,
    )
    scheduler.set_timesteps(num_steps, device=noise.device)
    x = noise if reimpose is None else reimpose(noise)
    for i, t in enumerate(scheduler.timesteps):
        # the scheduler's integer timesteps are rounded; the model gets the exact sigma it integrates
        v = velocity_fn(x, float(scheduler.sigmas[i]) * NUM_TRAIN_TIMESTEPS)
        x = scheduler.step(v, t, x, return_dict=False)[0].to(noise.dtype)
        if reimpose is not None:
            x = reimpose(x)
    return x


def few_step_sample(
    velocity_fn: VelocityFn,
    noise: torch.Tensor,
    sigmas: Sequence[float],
    generator: torch.Generator | None = None,
    renoise: bool = True,
) -> torch.Tensor:
    """The distilled student's sampler: predict x0 at each listed sigma, then move to the next.

    With renoise (the DMD-style rollout the student is distilled with) the next point is x0 mixed
    with fresh noise; without it the step is the deterministic Euler update.
    """
    x = noise
    for sigma, sigma_next in zip(sigmas[:-1], sigmas[1:]):
        v = velocity_fn(x, sigma * NUM_TRAIN_TIMESTEPS)
        x0 = predict_x0(x, v, sigma)
        if sigma_next == 0:
            return x0
        if renoise:
            fresh = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
            x = add_noise(x0, fresh, sigma_next)
        else:
            x = x + (sigma_next - sigma) * v
    return x
