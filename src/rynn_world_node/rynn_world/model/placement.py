"""Putting a diffusers model on a device in a dtype.

Diffusers' `ModelMixin.to` warns ("There are modules in ... that should be kept in float32")
whenever it is given a dtype, even the dtype the model already has; every model here is built in
float32, so a float32 load casts nothing and must not warn. A real cast (bf16 on CUDA) still goes
through `to`, casting every module as before."""

import torch


def place(model, device, dtype: torch.dtype):
    """`model` on `device` (None: where it is), cast to `dtype` only when its dtype differs."""
    model = model.to(device)
    return model if model.dtype == dtype else model.to(dtype)
