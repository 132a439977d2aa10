"""Several graph nodes in one process (a container), as ROS 2 component containers run them.

``config/teleop_graph.yaml`` names a container per node (``container: operator``) and
declares each container with an ``if`` (a launch argument, ``compose`` by default), so
the node list stays one definition: composed, the container's nodes run in one
``python -m rynn_world.launcher.container`` process on one executor; not composed,
each node is its own process exactly as before. Both launchers use ``group`` and
``container_command``. Plain Python, no ROS.
"""

from __future__ import annotations

from dataclasses import dataclass

from rynn_world.launcher.graph import GraphError, NodeSpec
from rynn_world.launcher.node_command import node_command

CONTAINER_MODULE = "rynn_world.launcher.container"
NODE_FLAG = "--node"


@dataclass(frozen=True)
class ContainerSpec:
    """One process holding ``components`` (resolved node specs) on one executor."""

    name: str
    components: tuple[NodeSpec, ...]
    module: str = CONTAINER_MODULE
    respawn: bool = False  # a container restarts as a whole or not at all: members are never respawned
    respawn_delay: float = 0.0

    @property
    def required(self) -> bool:
        return any(component.required for component in self.components)

    @property
    def environment(self) -> dict[str, str]:
        """Nothing beyond the launcher's: a container runs at normal priority (the graph refuses ``nice`` on its nodes)."""
        return {}

    @property
    def ready_log(self) -> str:
        """The line the container prints once every component is constructed (see container.py)."""
        return f"container {self.name} up:"


def group(specs: list) -> list:
    """Node specs in start order, with the members of each container replaced (at the
    first member's place) by one ``ContainerSpec``; nodes without a container stay as they are."""
    members: dict[str, list[NodeSpec]] = {}
    processes: list = []
    for spec in specs:
        name = getattr(spec, "container", "")
        if not name:
            processes.append(spec)
            continue
        if getattr(spec, "respawn", False):
            raise GraphError(f"node {spec.name} is in container {name} and respawned: a container restarts as a whole "
                             f"or not at all; run it in its own process (compose:=false) or drop respawn")
        if name not in members:
            members[name] = []
            processes.append(name)
        members[name].append(spec)
    return [ContainerSpec(item, tuple(members[item])) if isinstance(item, str) else item for item in processes]


def container_command(spec: ContainerSpec, python: str) -> list[str]:
    """``python -m rynn_world.launcher.container NAME --node MODULE --ros-args ... --node ...``:
    each component with the arguments it would get as its own process."""
    command = [python, "-m", spec.module, spec.name]
    for component in spec.components:
        command += [NODE_FLAG, *node_command(component, python)[2:]]  # drop "python -m"
    return command


def process_command(spec, python: str) -> list[str]:
    """The command line of one graph process: a container or a single node."""
    return container_command(spec, python) if isinstance(spec, ContainerSpec) else node_command(spec, python)
