"""The packages depend one way: the import graph derived from the sources (ast) has no cycle, every
import of a sibling or ROS package is declared in package.xml, and each edge points down the layers."""

from __future__ import annotations

import sys
from pathlib import Path

from package_graph import ament_index_packages, package_graph
from ros_test_tools import REPO_ROOT

# Lower first: a package imports only packages before it (rynn_world owns the bring-up).
LAYERS = ("rynn_teleop_msgs", "rynn_common", "rynn_retarget", "rynn_robot_bridge", "rynn_world")


def test_the_suite_imports_one_way_and_declares_what_it_imports():
    graph = package_graph(REPO_ROOT, ament_index_packages(Path(sys.prefix)))
    print(graph.report())
    assert set(graph.packages) == set(LAYERS)
    assert graph.cycles() == []
    assert [f"{item.path}:{item.line} {item.imported}" for item in graph.undeclared()] == []
    upward = [edge for edge in [*graph.edges(False), *graph.edges(True)] if LAYERS.index(edge[1]) > LAYERS.index(edge[0])]
    assert upward == []
    assert ("rynn_robot_bridge", "rynn_common") in graph.edges() and ("rynn_retarget", "rynn_common") in graph.edges()


def write_package(root: Path, name: str, depends: list[str], sources: dict[str, str]) -> None:
    directory = root / "src" / name
    (directory / name).mkdir(parents=True)
    (directory / "package.xml").write_text(
        f"<package format='3'><name>{name}</name>" + "".join(f"<exec_depend>{d}</exec_depend>" for d in depends)
        + "<test_depend>python3-pytest</test_depend></package>")
    for relative, text in sources.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_cycle_and_an_undeclared_import_are_found(tmp_path):
    write_package(tmp_path, "low", ["high"], {"low/core.py": "from high.top import thing\n"})
    write_package(tmp_path, "high", ["low"], {
        "high/top.py": "import low.core\nimport numpy\n",
        "test/test_top.py": "import pytest\n\nside = pytest.importorskip('third.part')\nfrom std_msgs.msg import String\n",
    })
    write_package(tmp_path, "third", [], {"third/part.py": "x = 1\n"})
    graph = package_graph(tmp_path, frozenset({"std_msgs"}))
    assert graph.edges() == {("high", "low"): 1, ("low", "high"): 1}
    assert graph.edges(in_test=True) == {("high", "third"): 1}
    assert [sorted(cycle[:-1]) for cycle in graph.cycles()] == [["high", "low"]]
    assert sorted((item.importer, item.imported, item.line) for item in graph.undeclared()) == [
        ("high", "std_msgs", 4), ("high", "third", 3)]  # numpy is neither a sibling nor a ROS package
    assert "cycles: high -> low -> high" in graph.report()
