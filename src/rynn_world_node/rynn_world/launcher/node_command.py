"""The command line that runs one node spec as its own process (embedded launcher)."""

from __future__ import annotations

import json

from rynn_world.launcher.graph import NodeSpec


def ros_value(value) -> str:
    """A parameter value as rcl reads ``-p name:=value`` (YAML): JSON spelling keeps its type,
    so strings such as "true", "" or an LCM URL stay strings and 30.0 stays a double."""
    return json.dumps(value)


def node_command(spec: NodeSpec, python: str) -> list[str]:
    """``python -m module --ros-args -r __node:=name -p k:=v ... -r from:=to ...``."""
    command = [python, "-m", spec.module, "--ros-args", "-r", f"__node:={spec.name}"]
    for name, value in spec.parameters.items():
        command += ["-p", f"{name}:={ros_value(value)}"]
    for source, target in spec.remappings:
        command += ["-r", f"{source}:={target}"]
    return command
