"""The learning-rate schedule: the paper's linear warm-up then constant, or a cosine decay for
short from-scratch runs; an unknown decay name is refused."""

import pytest
import torch

from rynn_world.training.config import OptimConfig
from rynn_world.training.loop import lr_schedule


def learning_rates(optim: OptimConfig, total_steps: int) -> list[float]:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=optim.lr)
    scheduler = lr_schedule(optimizer, optim, total_steps)
    rates = []
    for _ in range(total_steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def test_constant_after_linear_warmup():
    rates = learning_rates(OptimConfig(lr=1.0, warmup_steps=4), 10)
    assert rates[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert rates[4:] == pytest.approx([1.0] * 6)


def test_cosine_decays_to_the_final_ratio():
    rates = learning_rates(OptimConfig(lr=2.0, warmup_steps=5, decay="cosine", final_lr_ratio=0.1), 105)
    assert rates[4] == pytest.approx(2.0)
    assert rates[-1] == pytest.approx(0.2, rel=1e-3)
    assert rates[54] == pytest.approx(1.1)  # half way: the mean of start and end
    assert all(a >= b for a, b in zip(rates[4:], rates[5:]))


def test_unknown_decay_is_refused():
    with pytest.raises(ValueError, match="cosine"):
        learning_rates(OptimConfig(decay="linear"), 3)
