"""Training on more than one process: the launch settings an entry point checks at start-up, and the
check that data-parallel ranks still hold the same weights.

`accelerate launch --config_file <yaml>` turns the YAML into environment variables that the
Accelerator reads back. `fsdp_plan_from_file` runs that same translation (accelerate's own launch
code), so a YAML file on disk and the Accelerator of a running job are checked by one function,
`validate_fsdp_plan`: the layer classes to wrap exist in the model and hold most of its weights,
the precision is bf16 (the launch file's and the training config's, which `make_accelerator`
passes explicitly and so wins), the state dict is gathered whole (what `save_world_model` writes),
and the entry point is one that shards its model (train through accelerate, distill through
training.sharding, which also runs on CPUs).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.distributed.fsdp import FSDPModule
from torch.distributed.tensor import DTensor

from ..model.configs import WorldModelConfig
from ..model.transformer import RynnWorldTransformer

# Entry points that can shard their transformer: train through accelerator.prepare (accelerate runs
# FSDP on GPUs only), distill through training.sharding (GPUs and CPUs). train_vae trains through
# calls FSDP's hooks never see and averages gradients itself (loop.average_gradients): DDP only.
FSDP_ENTRY_POINTS = ("train", "distill")
SHARDED_BY_ACCELERATE = ("train",)
FSDP_PRECISION = "bf16"  # Wan2.2 trains in bf16; fp16 overflows its activations, fp32 doubles the memory
STATE_DICT_TYPE = "FULL_STATE_DICT"  # save_world_model writes one diffusers file, not per-rank shards
MIN_WRAPPED_SHARE = 0.9  # the wrapped layers must hold this share of the weights, or FSDP shards little ...
MAX_ROOT_UNIT_PARAMETERS = 10_000_000  # ... unless what stays whole on every rank is this small (40 MB in float32)


class DistributedConfigError(ValueError):
    """A launch setting that does not fit the model or the entry point; the message says which and why."""


@dataclass(frozen=True)
class FSDPPlan:
    """What an FSDP launch does with the model, read from accelerate's plugin."""

    version: int
    wrap_policy: str  # "transformer", "size" or "none"
    layer_classes: tuple[str, ...]
    state_dict_type: str
    mixed_precision: str  # the launch's ("bf16", "fp16", "no")
    reshard_after_forward: bool | str
    offload_params: bool


def plan_from_plugin(plugin, mixed_precision: str) -> FSDPPlan:
    """The FSDPPlan of an accelerate FullyShardedDataParallelPlugin (after its __post_init__)."""
    policy = getattr(plugin.auto_wrap_policy, "__name__", plugin.auto_wrap_policy)
    wrap = {"transformer_auto_wrap_policy": "transformer", "size_based_auto_wrap_policy": "size", None: "none"}
    state_dict_type = getattr(plugin.state_dict_type, "name", str(plugin.state_dict_type))
    offload = plugin.cpu_offload
    offload = bool(getattr(offload, "offload_params", False)) or type(offload).__name__ == "CPUOffloadPolicy"
    return FSDPPlan(version=int(plugin.fsdp_version), wrap_policy=wrap.get(policy, str(policy)),
                    layer_classes=tuple(plugin.transformer_cls_names_to_wrap or ()), state_dict_type=state_dict_type,
                    mixed_precision=str(mixed_precision), reshard_after_forward=plugin.reshard_after_forward,
                    offload_params=offload)


@contextmanager
def _environment(values: dict):
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def launch_environment(config_file: str | Path) -> dict[str, str]:
    """The environment `accelerate launch --config_file <file>` gives the training processes
    (accelerate's own argument validation and translation; the pinned accelerate's API)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_multi_gpu_env

    if not Path(config_file).is_file():
        raise DistributedConfigError(f"accelerate config {config_file} does not exist")
    args = launch_command_parser().parse_args(["--config_file", str(config_file), "entry.py"])
    args, _, _ = _validate_launch_command(args)
    return {k: str(v) for k, v in prepare_multi_gpu_env(args).items()
            if k.startswith(("ACCELERATE_", "FSDP_"))}


def fsdp_plan_from_file(config_file: str | Path) -> FSDPPlan | None:
    """The FSDPPlan an accelerate launch with this file would run, or None when it is not an FSDP launch."""
    from accelerate.utils import FullyShardedDataParallelPlugin

    env = launch_environment(config_file)
    if env.get("ACCELERATE_USE_FSDP", "false").lower() != "true":
        return None
    with _environment(env):
        plugin = FullyShardedDataParallelPlugin()
    return plan_from_plugin(plugin, env.get("ACCELERATE_MIXED_PRECISION", "no"))


_SKELETONS: dict[str, RynnWorldTransformer] = {}


def model_skeleton(config: WorldModelConfig) -> RynnWorldTransformer:
    """The config's transformer on the meta device: its module tree and parameter shapes, no memory."""
    key = repr((config.transformer, config.null_text_tokens))
    if key not in _SKELETONS:
        with torch.device("meta"):
            _SKELETONS[key] = RynnWorldTransformer(**config.transformer, null_text_tokens=config.null_text_tokens)
    return _SKELETONS[key]


def sharding_plan(plan: FSDPPlan, model: torch.nn.Module) -> dict:
    """Which modules an FSDP launch wraps: {"units": {class: count}, "wrapped_share": fraction of the weights}."""
    counts = Counter(type(m).__name__ for m in model.modules())
    total = sum(p.numel() for p in model.parameters())
    wrapped = 0
    for module in model.modules():
        if type(module).__name__ in plan.layer_classes:
            wrapped += sum(p.numel() for p in module.parameters())
    return {"units": {name: counts.get(name, 0) for name in plan.layer_classes},
            "wrapped_share": wrapped / max(total, 1), "parameters": total}


def validate_fsdp_plan(plan: FSDPPlan, config: WorldModelConfig, entry: str = "train",
                       training_precision: str | None = None) -> str:
    """Raise DistributedConfigError naming what is wrong; return a one-line summary of the plan.

    training_precision: the training config's run.mixed_precision, which make_accelerator passes to
    the Accelerator explicitly and therefore wins over the launch file's."""
    if entry not in FSDP_ENTRY_POINTS:
        raise DistributedConfigError(
            f"rynn_world.training.{entry} cannot run under FSDP: it trains through calls that FSDP/DDP hooks never "
            f"see and averages gradients itself; launch it with config/accelerate_ddp.yaml (FSDP entry points: "
            f"{', '.join(FSDP_ENTRY_POINTS)})")
    if plan.wrap_policy != "transformer" or not plan.layer_classes:
        raise DistributedConfigError(
            f"fsdp_auto_wrap_policy must be TRANSFORMER_BASED_WRAP with fsdp_transformer_layer_cls_to_wrap naming "
            f"the DiT block class, got policy {plan.wrap_policy!r}, classes {list(plan.layer_classes)}")
    model = model_skeleton(config)
    found = sharding_plan(plan, model)
    missing = [name for name, count in found["units"].items() if count == 0]
    if missing:
        known = sorted({type(m).__name__ for m in model.modules()})
        raise DistributedConfigError(f"fsdp_transformer_layer_cls_to_wrap names {missing}, which the {config.name} "
                                     f"model does not contain; its module classes: {known}")
    root_unit = (1 - found["wrapped_share"]) * found["parameters"]
    if found["wrapped_share"] < MIN_WRAPPED_SHARE and root_unit > MAX_ROOT_UNIT_PARAMETERS:
        raise DistributedConfigError(
            f"the wrapped classes {list(plan.layer_classes)} hold only {100 * found['wrapped_share']:.1f} % of the "
            f"{config.name} weights; the rest ({root_unit / 1e6:.0f} M parameters) would sit unsharded in the root unit "
            f"(need >= {100 * MIN_WRAPPED_SHARE:.0f} %)")
    if plan.mixed_precision != FSDP_PRECISION:
        raise DistributedConfigError(f"mixed_precision of the FSDP launch must be {FSDP_PRECISION}, got {plan.mixed_precision!r}")
    if training_precision is not None and training_precision != plan.mixed_precision:
        raise DistributedConfigError(
            f"the training config's run.mixed_precision is {training_precision!r} but the launch file says "
            f"{plan.mixed_precision!r}; the training config wins (make_accelerator passes it), so set both to {FSDP_PRECISION}")
    if plan.state_dict_type != STATE_DICT_TYPE:
        raise DistributedConfigError(f"fsdp_state_dict_type must be {STATE_DICT_TYPE} (checkpoints are one diffusers "
                                     f"file), got {plan.state_dict_type!r}")
    if plan.version not in (1, 2):
        raise DistributedConfigError(f"fsdp_version must be 1 or 2, got {plan.version}")
    units = ", ".join(f"{count} x {name}" for name, count in found["units"].items())
    count = found["parameters"]
    count = f"{count / 1e9:.2f} B" if count >= 1e8 else f"{count / 1e6:.2f} M"
    return (f"FSDP{plan.version}: {units} wrapped ({100 * found['wrapped_share']:.1f} % of "
            f"{count} parameters), {plan.mixed_precision}, {plan.state_dict_type}, "
            f"reshard after forward {plan.reshard_after_forward}, offload {plan.offload_params}")


def validate_fsdp_config(config_file: str | Path, config: WorldModelConfig, entry: str = "train",
                         training_precision: str | None = None) -> str:
    """validate_fsdp_plan of an accelerate YAML file (which must be an FSDP launch)."""
    plan = fsdp_plan_from_file(config_file)
    if plan is None:
        raise DistributedConfigError(f"{config_file} is not an FSDP launch (distributed_type: FSDP)")
    return validate_fsdp_plan(plan, config, entry, training_precision)


def launch_fsdp_plugin(accelerator):
    """The FSDP plugin of this launch, or None when it is not an FSDP launch of several processes.
    On CPUs accelerate runs an FSDP launch as MULTI_CPU data parallel and keeps no plugin (its state
    turns only a multi-GPU type into FSDP): the plugin is then read from the launch's environment."""
    if accelerator.distributed_type.name == "FSDP":
        return accelerator.state.fsdp_plugin
    if accelerator.num_processes > 1 and os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true":
        from accelerate.utils import FullyShardedDataParallelPlugin

        return FullyShardedDataParallelPlugin()
    return None


def check_launch(accelerator, config: WorldModelConfig, entry: str, training_precision: str) -> str | None:
    """Start-up check of a training entry point: under FSDP its plan must validate (else a clear
    DistributedConfigError before any weights or data are loaded). Returns the plan summary or None."""
    plugin = launch_fsdp_plugin(accelerator)
    if plugin is None:
        return None
    launch_precision = os.environ.get("ACCELERATE_MIXED_PRECISION", accelerator.mixed_precision)  # the launch file's
    summary = validate_fsdp_plan(plan_from_plugin(plugin, launch_precision), config, entry, training_precision)
    if entry in SHARDED_BY_ACCELERATE and accelerator.distributed_type.name != "FSDP":
        raise DistributedConfigError(
            f"rynn_world.training.{entry} shards through accelerate, which runs an FSDP launch on GPUs only (here it "
            f"would run {accelerator.distributed_type.name} data parallel); on CPUs use config/accelerate_ddp.yaml")
    accelerator.print(summary)
    return summary


# ---- data-parallel ranks hold the same weights ----------------------------------------------------

def tensors_digest(tensors: dict[str, torch.Tensor]) -> str:
    """sha256 over names and raw bytes, in name order: equal iff the tensors are bit-identical."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        tensor = tensors[name].detach().cpu().contiguous()
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)};".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def modules_digest(modules: dict[str, torch.nn.Module]) -> str:
    """tensors_digest of what this rank holds whole of the modules' state dicts (all of it unless
    sharded: then the buffers and the parameters FSDP leaves whole), under training.state's keys."""
    return tensors_digest({f"{m}.{k}": v for m, module in modules.items() for k, v in module.state_dict().items()
                           if not isinstance(v, DTensor)})


def rank_digests(accelerator, modules: dict[str, torch.nn.Module]) -> dict[str, list[str]] | None:
    """Every rank's modules_digest (a collective: all ranks call it), keyed for trainer.json:
    "rank_weight_digests" (data parallel: the whole weights) or "rank_replicated_digests" (sharded:
    what each rank holds whole, which must agree too); None with one process. Raises RuntimeError
    when the ranks differ."""
    if accelerator.num_processes == 1:
        return None
    digests: list = [None] * accelerator.num_processes
    torch.distributed.all_gather_object(digests, modules_digest(modules))
    if len(set(digests)) != 1:
        raise RuntimeError(f"data-parallel ranks hold different weights: {digests}")
    sharded = any(isinstance(m, FSDPModule) for m in modules.values())
    return {"rank_replicated_digests" if sharded else "rank_weight_digests": digests}
