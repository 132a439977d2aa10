"""The teleoperation graph (config/teleop_graph.yaml): load it and resolve launch arguments.

Plain Python, no ROS: both the ROS launch file and the embedded launcher turn the
same resolved ``NodeSpec`` list into processes, so the node list, parameters and
remappings have one source of truth.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rynn_common.config_paths import find_config
from rynn_common.process_priority import MAX_NICE, NICE_ENV
from rynn_world.checkpoints import packaged_checkpoint

GRAPH_FILE = "teleop_graph.yaml"
ARG_PATTERN = re.compile(r"\$\(arg ([A-Za-z_][A-Za-z0-9_]*)\)")
ARGUMENT_KEYS = {"default", "choices", "translate", "description"}
CONTAINER_KEYS = {"if", "description"}
NODE_KEYS = {"name", "package", "executable", "module", "required", "ready_log", "parameters", "remappings", "if", "container",
             "respawn", "respawn_delay", "nice"}


class GraphError(ValueError):
    """The graph file or a launch argument is invalid; the message says which and why."""


@dataclass(frozen=True)
class Argument:
    name: str
    default: object
    description: str = ""
    choices: tuple = ()
    translate: dict = field(default_factory=dict)

    def parse(self, text: str) -> object:
        """A command-line value (always text) as the default's type, checked against choices."""
        value = yaml.safe_load(text) if text != "" else ""
        expected = type(self.default)
        if expected is float and type(value) is int:
            value = float(value)
        elif expected is str:
            value = text
        if type(value) is not expected:
            raise GraphError(f"argument {self.name}:={text!r} must be {expected.__name__}")
        if self.choices and value not in self.choices:
            raise GraphError(f"argument {self.name}:={text!r} is not one of {', '.join(map(str, self.choices))}")
        return self.translate.get(value, value)

    @property
    def default_text(self) -> str:
        """The default as launch argument text (what ``parse`` reads back)."""
        return as_text(self.default)


@dataclass(frozen=True)
class NodeSpec:
    """One node process, with every ``$(arg ...)`` already substituted."""

    name: str
    package: str
    executable: str
    module: str
    required: bool
    parameters: dict
    remappings: tuple  # (from, to) pairs
    ready_log: str = ""
    container: str = ""  # the process it shares with other nodes when composed ("": its own process)
    respawn: bool = False  # restarted after respawn_delay s whenever it exits (as ros2 launch's respawn)
    respawn_delay: float = 0.0
    nice: int = 0  # 1..19: the process yields the CPU to the others (rynn_common.process_priority)

    @property
    def environment(self) -> dict[str, str]:
        """What the process needs in its environment beyond the launcher's (both launchers set it)."""
        return {NICE_ENV: str(self.nice)} if self.nice else {}


@dataclass(frozen=True)
class Graph:
    arguments: dict  # name -> Argument, in file order
    nodes: list  # raw node entries, substituted by resolve()
    path: Path
    containers: dict = field(default_factory=dict)  # name -> {"if": ..., "description": ...}


def default_graph_path() -> Path:
    return find_config("rynn_world", GRAPH_FILE)


def load_graph(path: str | Path | None = None) -> Graph:
    path = Path(path) if path else default_graph_path()
    raw = yaml.safe_load(path.read_text()) or {}
    unknown = set(raw) - {"arguments", "nodes", "containers"}
    if unknown:
        raise GraphError(f"{path}: unknown top-level keys {sorted(unknown)}")
    arguments = {}
    for name, entry in (raw.get("arguments") or {}).items():
        if set(entry) - ARGUMENT_KEYS or "default" not in entry:
            raise GraphError(f"{path}: argument {name!r} needs 'default' and only {sorted(ARGUMENT_KEYS)}")
        arguments[name] = Argument(
            name, entry["default"], entry.get("description", ""), tuple(entry.get("choices", ())), dict(entry.get("translate", {}))
        )
    nodes = list(raw.get("nodes") or [])
    names = [entry.get("name") for entry in nodes]
    for entry in nodes:
        missing = {"name", "package", "executable", "module"} - set(entry)
        if missing or set(entry) - NODE_KEYS:
            raise GraphError(f"{path}: node {entry.get('name')!r} needs {sorted(missing)}; allowed keys {sorted(NODE_KEYS)}")
        check_respawn(path, entry)
        nice = entry.get("nice", 0)
        if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= MAX_NICE:
            raise GraphError(f"{path}: node {entry['name']!r}: nice must be an integer 0..{MAX_NICE}, got {nice!r}")
        if nice and "container" in entry:
            raise GraphError(f"{path}: node {entry['name']!r}: nice and container exclude each other "
                             f"(a container's nodes share one process and its priority)")
    if len(set(names)) != len(names):
        raise GraphError(f"{path}: node names must be unique: {names}")
    containers = dict(raw.get("containers") or {})
    for name, entry in containers.items():
        if not isinstance(entry, dict) or set(entry) - CONTAINER_KEYS:
            raise GraphError(f"{path}: container {name!r} allows only {sorted(CONTAINER_KEYS)}")
    for entry in nodes:
        if "container" in entry and entry["container"] not in containers:
            raise GraphError(f"{path}: node {entry['name']!r} names container {entry['container']!r}, "
                             f"not one of the declared containers {sorted(containers)}")
    return Graph(arguments, nodes, path, containers)


def check_respawn(path: Path, entry: dict) -> None:
    """``respawn`` is a bool and excludes ``required`` (a respawned node's exit never stops the
    graph); ``respawn_delay`` is seconds >= 0 and needs ``respawn``."""
    respawn, delay = entry.get("respawn", False), entry.get("respawn_delay")
    if not isinstance(respawn, bool):
        raise GraphError(f"{path}: node {entry['name']!r}: respawn must be true/false, got {respawn!r}")
    if respawn and entry.get("required", False):
        raise GraphError(f"{path}: node {entry['name']!r} is both required and respawned; choose one")
    if delay is not None and (not respawn or isinstance(delay, bool) or not isinstance(delay, (int, float)) or delay < 0):
        raise GraphError(f"{path}: node {entry['name']!r}: respawn_delay must be seconds >= 0 on a respawned node")


def argument_values(graph: Graph, overrides: dict[str, str]) -> dict[str, object]:
    """Every argument's typed (and translated) value: the override's if given, else the default."""
    unknown = set(overrides) - set(graph.arguments)
    if unknown:
        raise GraphError(f"unknown launch arguments {sorted(unknown)}; known: {', '.join(graph.arguments)}")
    return {
        name: argument.parse(overrides[name] if name in overrides else argument.default_text)
        for name, argument in graph.arguments.items()
    }


def with_packaged_checkpoint(values: dict[str, object]) -> dict[str, object]:
    """An empty ``checkpoint`` becomes the packaged one of ``model_config`` (if it ships one): the
    bring-up names the weights once, for the world-model node and for the recorder's episode
    metadata (the recorder's package does not know rynn_world's checkpoints)."""
    if values.get("checkpoint") != "" or "model_config" not in values:
        return values
    packaged = packaged_checkpoint(str(values["model_config"]))
    return {**values, "checkpoint": str(packaged) if packaged else ""}


def substitute(value, values: dict[str, object]):
    """``$(arg x)`` alone -> x's typed value; inside a longer string -> its text; lists recursively."""
    if isinstance(value, list):
        return [substitute(item, values) for item in value]
    if not isinstance(value, str):
        return value

    def lookup(name: str):
        if name not in values:
            raise GraphError(f"$(arg {name}) names no declared argument")
        return values[name]

    whole = ARG_PATTERN.fullmatch(value)
    if whole:
        return lookup(whole.group(1))
    return ARG_PATTERN.sub(lambda match: as_text(lookup(match.group(1))), value)


def as_text(value) -> str:
    """A value as launch-argument text (YAML spelling of booleans)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def condition(expression, values: dict[str, object], where: str) -> bool:
    """An ``if:``: ``$(arg flag)`` (a bool argument), or ``<text> == <text>`` / ``<text> != <text>``
    after substitution, e.g. ``$(arg camera) == realsense``."""
    result = substitute(expression, values)
    if isinstance(result, str):
        for operator, equal in ((" == ", True), (" != ", False)):
            if operator in result:
                left, right = (side.strip() for side in result.split(operator, 1))
                return (left == right) is equal
    if not isinstance(result, bool):
        raise GraphError(f"{where}: 'if' must resolve to true/false or compare with == / !=, got {result!r}")
    return result


def node_parameters(entry: dict, values: dict[str, object]) -> dict:
    """Substituted parameters; ``name: {value: V, if: COND}`` sets ``name`` only when COND holds
    (otherwise the node's own default applies)."""
    parameters = {}
    for key, value in (entry.get("parameters") or {}).items():
        if isinstance(value, dict):
            if set(value) != {"value", "if"}:
                raise GraphError(f"node {entry['name']}: parameter {key} as a mapping needs exactly 'value' and 'if'")
            if not condition(value["if"], values, f"node {entry['name']} parameter {key}"):
                continue
            value = value["value"]
        parameters[key] = substitute(value, values)
    return parameters


def composed(graph: Graph, container: str, values: dict[str, object]) -> bool:
    """Whether ``container`` runs its nodes in one process for these arguments (its ``if``, default true)."""
    if not container:
        return False
    included = substitute(graph.containers[container].get("if", True), values)
    if not isinstance(included, bool):
        raise GraphError(f"container {container}: 'if' must resolve to true/false, got {included!r}")
    return included


def module_available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def resolve(graph: Graph, overrides: dict[str, str] | None = None, check_modules: bool = True) -> list[NodeSpec]:
    """The nodes to start for these launch arguments, in start order."""
    values = with_packaged_checkpoint(argument_values(graph, overrides or {}))
    specs = []
    for entry in graph.nodes:
        if "if" in entry and not condition(entry["if"], values, f"node {entry['name']}"):
            continue
        if check_modules and not module_available(entry["module"]):
            raise GraphError(f"node {entry['name']} needs the module {entry['module']}, which is not installed")
        specs.append(
            NodeSpec(
                name=entry["name"],
                package=entry["package"],
                executable=entry["executable"],
                module=entry["module"],
                required=bool(entry.get("required", False)),
                parameters=node_parameters(entry, values),
                remappings=tuple((source, substitute(target, values)) for source, target in (entry.get("remappings") or {}).items()),
                ready_log=entry.get("ready_log", ""),
                container=entry.get("container", "") if composed(graph, entry.get("container", ""), values) else "",
                respawn=entry.get("respawn", False),
                respawn_delay=float(entry.get("respawn_delay", 0.0)),
                nice=entry.get("nice", 0),
            )
        )
    return specs
