"""The robot side installs and runs without the operator side: every module of rynn_robot_bridge imports in a
process where rynn_retarget cannot be imported. The paired-episode generator, which needs both sides, lives in
rynn_world."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SOURCES = Path(__file__).resolve().parents[2]

IMPORT_EVERY_MODULE = """
import importlib, pkgutil, sys

class RefuseOperatorSide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "rynn_retarget":
            raise ModuleNotFoundError(f"No module named {name!r} (the operator side is not installed)", name=name)

sys.meta_path.insert(0, RefuseOperatorSide())
import rynn_robot_bridge
for module in pkgutil.walk_packages(rynn_robot_bridge.__path__, "rynn_robot_bridge."):
    try:
        importlib.import_module(module.name)
    except ModuleNotFoundError as error:
        print(module.name, error)
"""


def test_every_module_imports_without_rynn_retarget():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(SOURCES / p) for p in ("rynn_common", "rynn_robot_bridge"))}
    result = subprocess.run([sys.executable, "-c", IMPORT_EVERY_MODULE], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "", result.stdout  # each module that failed, with its error
