"""The README's graph diagram, topic and service tables and launch-argument table are generated from the
graph definition by scripts/graph_diagram.py: they fail here when they drift from it, and the script's
per-node interfaces fail when they drift from the node sources."""

from __future__ import annotations

import ast
import importlib.util
import sys

import pytest

from ros_test_tools import REPO_ROOT

spec = importlib.util.spec_from_file_location("graph_diagram", REPO_ROOT / "scripts" / "graph_diagram.py")
graph_diagram = sys.modules.setdefault("graph_diagram", importlib.util.module_from_spec(spec))
spec.loader.exec_module(graph_diagram)

PUBLISH = {"create_publisher": 0, "LocalPublisher": 1}  # call -> index of the message type argument
SUBSCRIBE = {"create_subscription": 0, "LocalSubscription": 1, "PolledSubscription": 1, "subscribe": 0}
SERVICE = {"create_service": 0}
CALL = {"create_client": 0}


def source_types(module: str) -> dict[str, set[str]]:
    """Message/service class names a node module passes to publishers, subscriptions, services and clients."""
    path = importlib.util.find_spec(module).origin
    found = {"pub": set(), "sub": set(), "service": set(), "call": set()}
    for node in ast.walk(ast.parse(open(path).read())):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        for kind, calls in (("pub", PUBLISH), ("sub", SUBSCRIBE), ("service", SERVICE), ("call", CALL)):
            if name in calls and len(node.args) > calls[name]:
                argument = node.args[calls[name]]
                if isinstance(argument, ast.Name) and argument.id[:1].isupper():  # a class, not a variable
                    found[kind].add(argument.id)
    return found


def test_readme_shows_the_generated_graph_and_arguments():
    text = graph_diagram.README.read_text()
    assert graph_diagram.BEGIN in text and graph_diagram.ARGS_BEGIN in text
    assert graph_diagram.readme_with_generated(text) == text, (
        "README.md's graph or launch arguments differ from the graph definition: "
        "run .venv/bin/python scripts/graph_diagram.py --write")


def test_every_graph_node_and_argument_is_shown():
    graph = graph_diagram.load_graph()
    section = graph_diagram.generated_graph_section()
    arguments = graph_diagram.generated_arguments_section()
    for entry in graph.nodes:
        assert f'{graph_diagram.mermaid_id(entry["name"])}["{entry["name"]}' in section
    for name, argument in graph.arguments.items():
        assert f"| `{name}` |" in arguments and argument.description.replace("|", "/") in arguments


def test_remappings_and_rates_come_from_the_definition():
    nodes = {node.name: node for node in graph_diagram.graph_nodes(graph_diagram.load_graph())}
    sim_topics = {port.name for port in nodes["sim_robot"].ports if port.kind == "pub"}
    assert graph_diagram.names.REAL_IMAGE_TOPIC in sim_topics and graph_diagram.names.IMAGE_TOPIC not in sim_topics
    rates = graph_diagram.rates("embedded_cpu", 30.0)
    assert rates["action"] == "200 Hz" and rates["model"] == "16 FPS"


@pytest.mark.parametrize("executable", sorted(graph_diagram.INTERFACES))
def test_interfaces_match_the_node_sources(executable):
    entry = next(e for e in graph_diagram.load_graph().nodes if e["executable"] == executable)
    declared = {"pub": set(), "sub": set(), "service": set(), "call": set()}
    for port in graph_diagram.INTERFACES[executable]:
        declared[port.kind].add(port.type.split("/")[1])
    assert source_types(entry["module"]) == declared


def test_a_missing_interface_is_found(tmp_path, monkeypatch):
    module = tmp_path / "some_node.py"
    module.write_text("class N:\n    def __init__(self):\n        self.create_publisher(Image, TOPIC, 10)\n"
                      "        self.create_subscription(JointState, TOPIC, self.cb, 10)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert source_types("some_node") == {"pub": {"Image"}, "sub": {"JointState"}, "service": set(), "call": set()}
