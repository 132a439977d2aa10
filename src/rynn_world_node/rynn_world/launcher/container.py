"""A component container: several Rynn nodes in one process on one executor.

    python -m rynn_world.launcher.container NAME --node MODULE [--ros-args ...] [--node MODULE ...]

Each MODULE exposes ``COMPONENT``, its node class, which takes rclpy's node options;
every node gets its own ``--ros-args`` (name, parameters, remappings) and ignores the
process-wide ones, so a node behaves as it does in its own process. Prints
``container NAME up: node, ...; in-process: topic, ...`` once every node is constructed (the
launchers' readiness line; the topics its nodes deliver to each other without DDS,
rynn_common.local_delivery). The GIL switch interval is the smallest any module asks for
(``GIL_SWITCH_INTERVAL_S``): a 200 Hz thread in one component must still get the GIL quickly.
"""

from __future__ import annotations

import importlib
import sys

from rynn_common.node_runner import run_components
from rynn_world.launcher.composition import NODE_FLAG


def parse(argv: list[str]) -> tuple[str, list[tuple[str, list[str]]]]:
    """(container name, [(module, its --ros-args ...)]); ``ValueError`` for anything else."""
    if len(argv) < 3 or argv[1] != NODE_FLAG:
        raise ValueError(f"usage: container NAME {NODE_FLAG} MODULE [--ros-args ...] [{NODE_FLAG} MODULE ...]")
    name, components, current = argv[0], [], None
    for item in argv[1:]:
        if item == NODE_FLAG:
            current = None
            continue
        if current is None:
            current = (item, [])
            components.append(current)
        else:
            current[1].append(item)
    return name, components


def main(argv: list[str] | None = None) -> int:
    try:
        name, components = parse(sys.argv[1:] if argv is None else argv)
        modules = [(importlib.import_module(module), ros_args) for module, ros_args in components]
        factories = [
            (lambda cls=module.COMPONENT, args=ros_args: cls(cli_args=args, use_global_arguments=False))
            for module, ros_args in modules
        ]
    except (ValueError, ImportError, AttributeError) as error:
        print(f"[container] error: {error}", file=sys.stderr)
        return 2
    sys.setswitchinterval(min([sys.getswitchinterval()] + [getattr(m, "GIL_SWITCH_INTERVAL_S", 1.0) for m, _ in modules]))

    def ready(nodes, linked: list[str]) -> None:
        print(f"container {name} up: {', '.join(node.get_name() for node in nodes)}"
              f"{'; in-process: ' + ', '.join(linked) if linked else ''}", flush=True)

    run_components(factories, args=[], on_ready=ready)  # no process-wide ROS arguments: each node has its own
    return 0


if __name__ == "__main__":
    sys.exit(main())
