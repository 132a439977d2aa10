"""Exponential moving average of the trainable weights (full fine-tuning, decay 0.999).

The effective decay ramps up as min(decay, (1 + n) / (10 + n)) so short runs are not dominated
by the initial weights.
"""

import torch


class EMA:
    def __init__(self, named_parameters, decay: float):
        self.decay = decay
        self.updates = 0
        self.shadow = {name: p.detach().clone().float() for name, p in named_parameters}

    @torch.no_grad()
    def update(self, named_parameters) -> None:
        self.updates += 1
        decay = min(self.decay, (1 + self.updates) / (10 + self.updates))
        for name, p in named_parameters:
            self.shadow[name].lerp_(p.detach().float(), 1 - decay)

    @torch.no_grad()
    def copy_to(self, module: torch.nn.Module) -> None:
        params = dict(module.named_parameters())
        for name, value in self.shadow.items():
            params[name].copy_(value.to(params[name].dtype))
