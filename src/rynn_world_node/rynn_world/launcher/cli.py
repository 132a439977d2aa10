"""``rynn_launch``: the teleoperation graph without a ROS 2 install (the embedded launcher).

    rynn_launch [name:=value ...] [--set NODE.PARAM=VALUE ...] [--log-dir DIR] [--show-args] [--dry-run]

Same graph and arguments as ``ros2 launch rynn_world digital_teleop.launch.py``;
each node runs as ``python -m <module> --ros-args ...`` with this interpreter.
Exit status: 0 after Ctrl-C/SIGTERM, 1 when a required node died, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import yaml

from rynn_world.launcher.composition import group, process_command
from rynn_world.launcher.graph import GraphError, NodeSpec, load_graph, resolve
from rynn_world.launcher.supervisor import GraphSupervisor, install_stop_handlers


def parse_command_line(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rynn_launch", description=__doc__.split("\n\n")[0])
    parser.add_argument("arguments", nargs="*", metavar="name:=value", help="launch arguments (see --show-args)")
    parser.add_argument("--graph", help="graph file (default: teleop_graph.yaml from the config directory)")
    parser.add_argument("--log-dir", help="where each node's log goes (default: $ROS_LOG_DIR or ~/.ros/log, rynn_launch/<time>)")
    parser.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE",
                        help="override one node parameter (VALUE in YAML; repeatable)")
    parser.add_argument("--show-args", action="store_true", help="list the launch arguments and exit")
    parser.add_argument("--dry-run", action="store_true", help="print each node's command and exit")
    parser.add_argument("--sigint-timeout", type=float, default=10.0, help="seconds nodes get after SIGINT before SIGTERM")
    return parser.parse_args(argv)


def launch_arguments(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        name, separator, value = item.partition(":=")
        if not separator or not name:
            raise GraphError(f"launch arguments are name:=value, got {item!r}")
        pairs[name] = value
    return pairs


def apply_overrides(specs: list[NodeSpec], items: list[str]) -> list[NodeSpec]:
    """``--set node.param=value``: a double parameter given as 20 stays a double (ROS types are strict)."""
    by_name = {spec.name: spec for spec in specs}
    for item in items:
        target, separator, text = item.partition("=")
        node_name, dot, parameter = target.partition(".")
        if not separator or not dot or node_name not in by_name:
            raise GraphError(f"--set wants NODE.PARAM=VALUE with NODE one of {', '.join(by_name)}, got {item!r}")
        value = yaml.safe_load(text) if text else ""
        if isinstance(by_name[node_name].parameters.get(parameter), float) and type(value) is int:
            value = float(value)
        by_name[node_name].parameters[parameter] = value
    return specs


def default_log_dir() -> Path:
    base = Path(os.environ.get("ROS_LOG_DIR") or Path(os.environ.get("ROS_HOME", Path.home() / ".ros")) / "log")
    return base / "rynn_launch" / f"{time.strftime('%Y-%m-%d-%H-%M-%S')}-{os.getpid()}"


def show_arguments(graph) -> None:
    print(f"Arguments of {graph.path} (name:=value):")
    for argument in graph.arguments.values():
        choices = f" [{'|'.join(map(str, argument.choices))}]" if argument.choices else ""
        print(f"  {argument.name}{choices} (default: {argument.default_text!r})\n      {argument.description}")


def main(argv: list[str] | None = None) -> int:
    options = parse_command_line(sys.argv[1:] if argv is None else argv)
    try:
        graph = load_graph(options.graph)
        if options.show_args:
            show_arguments(graph)
            return 0
        specs = group(apply_overrides(resolve(graph, launch_arguments(options.arguments)), options.set))
    except (GraphError, FileNotFoundError) as error:
        print(f"[rynn_launch] error: {error}", file=sys.stderr)
        return 2
    commands = [(spec, process_command(spec, sys.executable)) for spec in specs]
    if options.dry_run:
        for spec, command in commands:
            print(f"{spec.name}: {' '.join(command)}")
        return 0

    stop = threading.Event()
    supervisor = GraphSupervisor(
        commands, Path(options.log_dir) if options.log_dir else default_log_dir(), sigint_timeout_s=options.sigint_timeout
    )
    install_stop_handlers(stop, lambda name: supervisor.say(f"{name} received"))
    supervisor.say(f"graph {graph.path} with {' '.join(options.arguments) or 'default arguments'}")
    supervisor.start()
    return supervisor.run(stop)


if __name__ == "__main__":
    sys.exit(main())
