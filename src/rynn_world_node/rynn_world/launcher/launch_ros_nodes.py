"""Graph node specs as launch_ros ``Node`` keyword arguments (plain data; launch not needed)."""

from __future__ import annotations

from rynn_world.launcher.graph import NodeSpec


def node_arguments(spec: NodeSpec) -> dict:
    """Keyword arguments for ``launch_ros.actions.Node`` (the caller adds ``on_exit`` for required nodes;
    ``respawn``/``respawn_delay`` are launch's own, so both launchers restart the same nodes)."""
    return {
        "package": spec.package,
        "executable": spec.executable,
        "name": spec.name,
        "parameters": [dict(spec.parameters)] if spec.parameters else [],
        "remappings": list(spec.remappings),
        "output": "screen",
        "respawn": spec.respawn,
        "respawn_delay": spec.respawn_delay,
        **({"additional_env": spec.environment} if spec.environment else {}),
    }


def required_exit_reason(spec: NodeSpec) -> str:
    """Why the graph stops when a required node exits (the same words as the embedded launcher)."""
    return f"required node {spec.name} exited; stopping the graph"
