"""Composition: graph nodes sharing one container process (src/rynn_world_node/config/teleop_graph.yaml ``containers``).

The composed graph's multi-process behaviour (mode switches, no stale frames, faults) is
test/test_teleop_graph_e2e.py, run composed and not composed.
"""

from __future__ import annotations

import sys

import pytest

from rynn_world.launcher.composition import ContainerSpec, container_command, group, process_command
from rynn_world.launcher.container import parse
from rynn_world.launcher.graph import GraphError, load_graph, resolve
from rynn_world.launcher.node_command import node_command

OPERATOR = ["tracker_node", "glove_node", "retarget_node"]


def process_names(specs) -> list[str]:
    return [spec.name for spec in specs]


def test_the_operator_side_runs_in_one_container_by_default_and_in_its_own_processes_when_asked():
    graph = load_graph()
    base = {"console": "false"} if "console" in graph.arguments else {}
    composed = group(resolve(graph, base))
    container = composed[0]
    assert isinstance(container, ContainerSpec) and container.name == "operator"
    assert [spec.name for spec in container.components] == OPERATOR
    assert container.required and container.ready_log == "container operator up:"
    assert "tracker_node" not in process_names(composed) and "sim_robot" in process_names(composed)

    separate = group(resolve(graph, {**base, "compose": "false"}))
    assert process_names(separate)[:3] == OPERATOR
    assert not any(isinstance(spec, ContainerSpec) for spec in separate)
    assert len(separate) == len(composed) + 2


def test_a_container_runs_each_component_with_the_arguments_it_gets_as_its_own_process():
    composed = group(resolve(load_graph(), {"source": "replay", "replay_path": "/tmp/session.jsonl"}))
    container = composed[0]
    command = process_command(container, "/usr/bin/python3")
    assert command[:4] == ["/usr/bin/python3", "-m", "rynn_world.launcher.container", "operator"]
    name, components = parse(command[3:])
    assert name == "operator"
    for (module, ros_args), spec in zip(components, container.components, strict=True):
        assert [sys.executable, "-m", module, *ros_args] == node_command(spec, sys.executable)
    assert 'replay.path:="/tmp/session.jsonl"' in components[0][1]
    assert container_command(container, "/usr/bin/python3") == command  # the ros2 launch file runs the same command


def write_graph(tmp_path, containers: str, member: str = "    container: operator\n") -> str:
    path = tmp_path / "graph.yaml"
    path.write_text(
        "arguments:\n  compose: {default: true}\n"
        f"{containers}"
        "nodes:\n"
        "  - {name: a, package: p, executable: a, module: json}\n"
        f"  - name: b\n    package: p\n    executable: b\n    module: json\n{member}"
        "  - {name: c, package: p, executable: c, module: json, container: operator}\n"
    )
    return str(path)


def test_container_placement_keeps_the_start_order_of_its_first_member(tmp_path):
    graph = load_graph(write_graph(tmp_path, "containers:\n  operator: {if: $(arg compose)}\n"))
    assert [s.name for s in group(resolve(graph))] == ["a", "operator"]
    assert process_names(group(resolve(graph, {"compose": "false"}))) == ["a", "b", "c"]


@pytest.mark.parametrize("containers, member, error", [
    ("", "    container: operator\n", "names container 'operator', not one of the declared containers"),
    ("containers:\n  operator: {if: true, threads: 2}\n", "", "container 'operator' allows only"),
    ("containers:\n  operator: {if: maybe}\n", "", "'if' must resolve to true/false"),
])
def test_bad_container_definitions_are_clear_errors(tmp_path, containers, member, error):
    with pytest.raises(GraphError, match=error):
        group(resolve(load_graph(write_graph(tmp_path, containers, member))))


def test_a_respawned_node_cannot_sit_in_a_container(tmp_path):
    member = "    container: operator\n    respawn: true\n"
    graph = load_graph(write_graph(tmp_path, "containers:\n  operator: {}\n", member))
    with pytest.raises(GraphError, match="a container restarts as a whole or not at all"):
        group(resolve(graph))


@pytest.mark.parametrize("argv, error", [
    ([], "usage: container NAME --node MODULE"),
    (["operator", "rynn_retarget.nodes.tracker_node"], "usage"),
])
def test_container_command_line_errors(argv, error):
    with pytest.raises(ValueError, match=error):
        parse(argv)


def test_container_refuses_a_module_without_a_component(capsys):
    from rynn_world.launcher.container import main

    assert main(["x", "--node", "json"]) == 2
    assert "has no attribute 'COMPONENT'" in capsys.readouterr().err
