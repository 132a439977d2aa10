"""Resumable training state in safetensors: models, optimizers, schedulers, EMA, RNG, step.

A checkpoint directory `<output_dir>/checkpoints/step_NNNNNNNN/` holds
  modules.safetensors     every trained module's state dict, keys prefixed `<module>.`
  optimizers.safetensors  optimizer tensors (`<optimizer>.<param index>.<name>`) + JSON structure
  ema.safetensors         EMA shadow weights
  rng.safetensors         torch CPU / CUDA and NumPy generator states
  trainer.json            step, scheduler states, optimizer param groups, python RNG, loss history
Loading restores all of them in place, so a resumed run continues bit-exactly. Tensors are whole in
the files whether the run was sharded (FSDP: gathered by `gather_training_state` on every rank and
written by the main process) or not, and are read one at a time and cut to each rank's shard.
"""

import json
import random
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from rynn_common.directories import directory_in_progress

from .sharding import full_tensors, shard_like

CHECKPOINT_GLOB = "step_*"


def checkpoint_dir(output_dir, step: int) -> Path:
    return Path(output_dir) / "checkpoints" / f"step_{step:08d}"


def latest_checkpoint(output_dir) -> Path | None:
    found = sorted((Path(output_dir) / "checkpoints").glob(CHECKPOINT_GLOB))
    complete = [p for p in found if (p / "trainer.json").is_file()]
    return complete[-1] if complete else None


def _optimizer_tensors(name: str, state: dict) -> tuple[dict, dict]:
    tensors, scalars = {}, {}
    for index, values in state["state"].items():
        for key, value in values.items():
            if torch.is_tensor(value):
                tensors[f"{name}.{index}.{key}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{index}.{key}"] = value
    return tensors, {"param_groups": state["param_groups"], "scalars": scalars}


def _restore_optimizer(name: str, optimizer: torch.optim.Optimizer, tensors, structure: dict) -> None:
    """`tensors`: the open optimizers file; each state tensor but the step count is placed like the
    parameter it belongs to (the step stays where torch's load_state_dict leaves it)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    state: dict = {}
    prefix = f"{name}."
    for key in tensors.keys():
        if key.startswith(prefix):
            index, sub = key[len(prefix):].split(".", 1)
            value = tensors.get_tensor(key)
            state.setdefault(int(index), {})[sub] = value if sub == "step" else shard_like(params[int(index)], value)
    for key, value in structure["scalars"].items():
        index, sub = key.split(".", 1)
        state.setdefault(int(index), {})[sub] = value
    optimizer.load_state_dict({"state": state, "param_groups": structure["param_groups"]})


def gather_training_state(modules: dict, optimizers: dict, emas: dict, keep: bool) -> dict | None:
    """The modules' state dicts, the optimizers' states and the EMA weights as whole CPU tensors, on
    the process that writes the checkpoint (`keep`); None elsewhere. A collective when the modules
    are sharded: every rank calls it."""
    snapshot: dict = {"modules": {}, "optimizers": {}, "emas": {}}
    for name, module in modules.items():
        snapshot["modules"][name] = full_tensors(module.state_dict(), keep)
    for name, optimizer in optimizers.items():
        state = optimizer.state_dict()
        snapshot["optimizers"][name] = {
            "state": {index: full_tensors(values, keep) for index, values in state["state"].items()},
            "param_groups": state["param_groups"]}
    for name, ema in emas.items():
        snapshot["emas"][name] = full_tensors(ema.shadow, keep)
    return snapshot if keep else None


def save_training_state(directory: Path, step: int, snapshot: dict, schedulers: dict, emas: dict, history: dict,
                        extra: dict | None = None) -> Path:
    """Write `snapshot` (gather_training_state) to `<dir>.partial` then rename, so a crash never leaves
    a checkpoint that looks complete. extra: more JSON-serialisable entries for trainer.json (the
    ranks' weight digests of a data-parallel run)."""
    directory = Path(directory)
    with directory_in_progress(directory) as partial:
        _write_training_state(partial, step, snapshot, schedulers, emas, history, extra)
    return directory


def _write_training_state(partial: Path, step: int, snapshot: dict, schedulers: dict, emas: dict, history: dict,
                          extra: dict | None = None) -> None:
    save_file({f"{m}.{k}": v.contiguous() for m, state in snapshot["modules"].items() for k, v in state.items()},
              str(partial / "modules.safetensors"))
    optimizer_tensors, optimizer_structure = {}, {}
    for name, state in snapshot["optimizers"].items():
        tensors, optimizer_structure[name] = _optimizer_tensors(name, state)
        optimizer_tensors.update(tensors)
    save_file(optimizer_tensors, str(partial / "optimizers.safetensors"))
    save_file({f"{e}.{k}": v.contiguous() for e, shadow in snapshot["emas"].items() for k, v in shadow.items()} or
              {"_empty": torch.zeros(0)}, str(partial / "ema.safetensors"))
    numpy_state = np.random.get_state()
    rng = {"torch": torch.get_rng_state(), "numpy": torch.from_numpy(numpy_state[1].astype(np.int64))}
    if torch.cuda.is_available():
        rng.update({f"cuda.{i}": s for i, s in enumerate(torch.cuda.get_rng_state_all())})
    save_file(rng, str(partial / "rng.safetensors"))
    python_state = random.getstate()
    trainer = {
        "step": step,
        "schedulers": {n: s.state_dict() for n, s in schedulers.items()},
        "optimizers": optimizer_structure,
        "ema_updates": {n: e.updates for n, e in emas.items()},
        "numpy_rng": [numpy_state[0], int(numpy_state[2]), int(numpy_state[3]), float(numpy_state[4])],
        "python_rng": [python_state[0], list(python_state[1]), python_state[2]],
        "history": history,
        **(extra or {}),
    }
    (partial / "trainer.json").write_text(json.dumps(trainer))


def load_training_state(directory: Path, modules: dict, optimizers: dict, schedulers: dict, emas: dict) -> tuple[int, dict]:
    """Restore everything in place; returns (step, loss history)."""
    directory = Path(directory)
    trainer = json.loads((directory / "trainer.json").read_text())
    with safe_open(str(directory / "modules.safetensors"), framework="pt") as weights:
        for name, module in modules.items():
            prefix = f"{name}."
            current = module.state_dict()
            module.load_state_dict({k[len(prefix):]: shard_like(current.get(k[len(prefix):]), weights.get_tensor(k))
                                    for k in weights.keys() if k.startswith(prefix)})
    with safe_open(str(directory / "optimizers.safetensors"), framework="pt") as optimizer_tensors:
        for name, optimizer in optimizers.items():
            _restore_optimizer(name, optimizer, optimizer_tensors, trainer["optimizers"][name])
    for name, scheduler in schedulers.items():
        scheduler.load_state_dict(trainer["schedulers"][name])
    with safe_open(str(directory / "ema.safetensors"), framework="pt") as ema_tensors:
        for name, ema in emas.items():
            prefix = f"{name}."
            ema.shadow = {k[len(prefix):]: shard_like(ema.shadow.get(k[len(prefix):]), ema_tensors.get_tensor(k))
                          for k in ema_tensors.keys() if k.startswith(prefix)}
            ema.updates = trainer["ema_updates"][name]
    with safe_open(str(directory / "rng.safetensors"), framework="pt") as rng_file:
        rng = {k: rng_file.get_tensor(k) for k in rng_file.keys()}
    torch.set_rng_state(rng["torch"])
    if torch.cuda.is_available():
        cuda = [rng[k] for k in sorted(k for k in rng if k.startswith("cuda."))]
        if cuda:
            torch.cuda.set_rng_state_all(cuda)
    kind, pos, has_gauss, cached = trainer["numpy_rng"]
    np.random.set_state((kind, rng["numpy"].numpy().astype(np.uint32), pos, has_gauss, cached))
    version, internal, gauss = trainer["python_rng"]
    random.setstate((version, tuple(internal), gauss))
    return trainer["step"], trainer["history"]
