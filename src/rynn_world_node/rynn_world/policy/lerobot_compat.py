"""LeRobot's own ACT policy, imported on this project's pinned stack.

LeRobot is installed with ``--no-deps`` (scripts/setup.sh): its metadata caps torch, diffusers and
huggingface_hub below the project's pins. Its ACT modules run unchanged on torch 2.13; two things on
the way to them do not, and ``load_act`` steps around exactly those two, nothing else:

1. ``lerobot/policies/__init__.py`` imports every policy's configuration eagerly, GR00T's among
   them, whose ``GR00TN15Config(PretrainedConfig)`` dataclass is a ``TypeError`` under transformers
   5.x ("non-default argument 'backbone_cfg' follows default argument"). The package is entered
   without running that ``__init__`` (its subpackages, ``act`` included, import as usual).
2. The only torchvision wheel for torch 2.13 on PyPI is a CUDA build; with the CPU torch its C ops
   (``torchvision._C``: nms, roi_align, ...) cannot load (``libc10_cuda.so`` is missing), which
   torchvision tolerates, except that ``torchvision/_meta_registrations.py`` registers fake kernels
   for ``torchvision::nms`` and ``torchvision::qnms`` unconditionally, and that raises when the ops do
   not exist. Their schemas are declared first (no kernel: calling them raises). ACT uses only
   torchvision's pure-Python ResNet, ``IntermediateLayerGetter`` and ``FrozenBatchNorm2d``.
   Where torchvision's ops do load (a CUDA torch), nothing is declared. Because transformers imports
   torchvision whenever it is installed (and an unimportable one breaks diffusers' Wan model),
   scripts/setup.sh installs it into ``<venv>/lerobot_extras``, which only ``load_act`` puts on
   ``sys.path`` (``RYNN_LEROBOT_EXTRAS`` names another directory).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import NamedTuple

import torch

_FAKE_REGISTERED_OPS = {  # torchvision::<name>: the schema torchvision's C++ library would define
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}
_schema_library: torch.library.Library | None = None


class LeRobotACT(NamedTuple):
    ACTConfig: type
    ACTPolicy: type
    make_pre_post_processors: object  # lerobot.policies.act.processor_act.make_act_pre_post_processors
    PolicyFeature: type
    FeatureType: type
    NormalizationMode: type
    version: str


class LeRobotUnavailable(ImportError):
    """LeRobot (or what its ACT policy imports) is not installed; the message says how to install it."""


def _torchvision_ops_load() -> bool:
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        raise LeRobotUnavailable(f"torchvision is not installed in {extras_directory()} (pip install --no-deps --target "
                                 f"{extras_directory()} -c requirements/constraints.txt torchvision; scripts/setup.sh does this)")
    library = next(iter(spec.submodule_search_locations)) + "/_C.so"
    try:
        torch.ops.load_library(library)
        return True
    except (OSError, RuntimeError):
        return False


def extras_directory() -> Path:
    """Where scripts/setup.sh installs torchvision for LeRobot (outside site-packages)."""
    return Path(os.environ.get("RYNN_LEROBOT_EXTRAS") or Path(sys.prefix) / "lerobot_extras")


def _prepare_torchvision() -> None:
    global _schema_library
    extras = str(extras_directory())
    if Path(extras).is_dir() and extras not in sys.path:
        sys.path.append(extras)
        importlib.invalidate_caches()
    if "torchvision" in sys.modules or _schema_library is not None or _torchvision_ops_load():
        return
    _schema_library = torch.library.Library("torchvision", "FRAGMENT")
    for name, schema in _FAKE_REGISTERED_OPS.items():
        if not torch._C._dispatch_has_kernel(f"torchvision::{name}"):
            _schema_library.define(schema)


def _enter_policies_package() -> None:
    if "lerobot.policies" in sys.modules:
        return
    spec = importlib.util.find_spec("lerobot")
    if spec is None:
        raise LeRobotUnavailable("lerobot is not installed: pip install --no-deps -c requirements/constraints.txt lerobot "
                                 "(scripts/setup.sh does this)")
    package = types.ModuleType("lerobot.policies")
    package.__path__ = [next(iter(spec.submodule_search_locations)) + "/policies"]
    package.__package__ = "lerobot.policies"
    sys.modules["lerobot.policies"] = package


def load_act() -> LeRobotACT:
    """LeRobot's ACT configuration, policy and processors (``lerobot.policies.act``)."""
    _prepare_torchvision()
    _enter_policies_package()
    try:
        import lerobot
        from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
        from lerobot.policies.act.configuration_act import ACTConfig
        from lerobot.policies.act.modeling_act import ACTPolicy
        from lerobot.policies.act.processor_act import make_act_pre_post_processors
    except ModuleNotFoundError as exc:
        raise LeRobotUnavailable(f"LeRobot's ACT policy needs {exc.name!r}: pip install -c requirements/constraints.txt "
                                 f"-r requirements/requirements.txt") from exc
    version = getattr(lerobot, "__version__", "") or importlib.metadata.version("lerobot")
    return LeRobotACT(ACTConfig, ACTPolicy, make_act_pre_post_processors, PolicyFeature, FeatureType,
                      NormalizationMode, version)
