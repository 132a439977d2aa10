"""Fully sharded data parallel (torch FSDP2) for the world model's training entry points.

accelerate shards one model that is entered through its forward, on GPUs only (its state turns an
FSDP launch into FSDP from a multi-GPU type; on CPUs the same launch runs as MULTI_CPU data
parallel). Distillation trains a student and a critic beside a frozen teacher, enters the student
through `forward_cached` and `embed_text`, and sends gradients through a KV cache, so it applies
torch's `fully_shard` here, with the launch's plan (distributed.launch_fsdp_plugin): each unit
class the plan names is a shard unit, the rest is the root unit. Two things the model needs:
- `control_scale` is a 0-dim parameter, which `fully_shard` refuses ("fully_shard doesn't support
  scalar parameters"): it stays whole on every rank, and its gradient is averaged as under DDP
  (loop.average_gradients);
- a model trained through a KV cache keeps its gathered weights from its first forward of a step
  to the end of its backward (`keep_gathered`): gradients reach earlier calls of a block through
  the keys and values it left in the cache, a path on which FSDP's per-call backward hook does not
  re-gather the weights ("setStorage: ... out of bounds for storage of size 0"). `release_gathered`
  then frees them before the optimizer steps on the shards.

Checkpoints stay one file of whole tensors (FULL_STATE_DICT): `full_tensors` gathers a state dict
on every rank (a collective) and keeps it on the main process; `shard_like` cuts a whole tensor
read from a checkpoint into this rank's shard of the parameter it restores.
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, OffloadPolicy, fully_shard, register_fsdp_forward_method
from torch.distributed.tensor import DTensor, distribute_tensor

from .distributed import plan_from_plugin


def is_sharded(module: torch.nn.Module) -> bool:
    return isinstance(module, FSDPModule)


def shard_model(model: torch.nn.Module, plugin, mixed_precision: str, device, keep_gathered: bool = False) -> torch.nn.Module:
    """`model` sharded in place over all ranks as the launch's FSDP plugin says (see the module docstring);
    each rank's shards move to its device (FSDP's), and so do the parameters left whole (`device`).

    mixed_precision: the Accelerator's ("bf16": bf16 compute, float32 gradient reduction and master weights)."""
    plan = plan_from_plugin(plugin, mixed_precision)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) \
        if mixed_precision == "bf16" else MixedPrecisionPolicy()
    offload = plugin.cpu_offload if isinstance(plugin.cpu_offload, OffloadPolicy) else OffloadPolicy()
    reshard = False if keep_gathered else bool(plan.reshard_after_forward)
    units = [m for m in model.modules() if type(m).__name__ in plan.layer_classes]
    for unit in units:
        fully_shard(unit, reshard_after_forward=reshard, mp_policy=policy, offload_policy=offload)
    scalars = {p for p in model.parameters() if p.ndim == 0}
    for param in scalars:  # FSDP moves only what it shards
        param.data = param.data.to(device)
    # the root unit (embeddings, head) stays gathered from forward to backward, as accelerate keeps it:
    # resharding it after embed_text, which forward itself calls, would pull it away mid-forward
    fully_shard(model, reshard_after_forward=False, mp_policy=policy, offload_policy=offload, ignored_params=scalars)
    for module in [*units, model]:  # methods called from outside forward gather the weights like forward
        for name in getattr(module, "ENTRY_METHODS", ()):
            register_fsdp_forward_method(module, name)
    # the model returns reshaped views (velocity, context keys and values) and changes none of them in
    # place, the misuse FSDP warns of at every sharded module's first call
    for name in {type(m).__name__ for m in [*units, model]}:
        warnings.filterwarnings("ignore", message=rf"FSDP2-wrapped module \({name}\) returned a view tensor")
    if keep_gathered:
        model.set_reshard_after_backward(False)
    return model


def release_gathered(model: torch.nn.Module) -> None:
    """Free the gathered weights of a `keep_gathered` model, so the reduced gradients sit on the shards
    the optimizer steps and the next forward gathers the updated weights. No-op when not sharded."""
    for module in model.modules():
        if isinstance(module, FSDPModule):
            module.reshard()


def full_tensors(tensors: dict, keep: bool) -> dict | None:
    """The tensors whole, on the CPU: sharded ones gathered from every rank (a collective: all ranks
    call it with the same keys). Only a rank with `keep` returns them; the others get None."""
    whole = {}
    for name, value in tensors.items():
        if isinstance(value, DTensor):
            value = value.full_tensor()
        if keep:
            whole[name] = value.detach().cpu() if torch.is_tensor(value) else value
    return whole if keep else None


def shard_like(template, whole: torch.Tensor) -> torch.Tensor:
    """`whole` (read from a checkpoint) as `template` holds it: on its device and in its dtype, and cut
    to this rank's shard when `template` is sharded. Unchanged when there is no template of its shape."""
    if not torch.is_tensor(template) or tuple(whole.shape) != tuple(template.shape):
        return whole
    local = whole.to(device=template.device, dtype=template.dtype)
    if not isinstance(template, DTensor):
        return local
    return distribute_tensor(local, template.device_mesh, template.placements, src_data_rank=None)


def whole_copy(model: torch.nn.Module, keep: bool) -> torch.nn.Module | None:
    """A separate, unsharded copy of a diffusers model on the rank that keeps it (`keep`; None
    elsewhere), for saving. Sharded: its weights gathered from every rank (a collective) into a copy
    built on the CPU without initialising weights it is about to overwrite."""
    if not is_sharded(model):
        return copy.deepcopy(model) if keep else None
    state = full_tensors(model.state_dict(), keep)
    if not keep:
        return None
    original = next(c for c in type(model).__bases__ if c is not FSDPModule)
    with torch.device("meta"):
        whole = original.from_config(model.config)
    whole.to_empty(device="cpu")
    whole.load_state_dict(state)
    for name, buffer in model.named_buffers():  # the non-persistent ones are not in the state dict
        whole.get_buffer(name).copy_(buffer)
    return whole
