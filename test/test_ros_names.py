"""Topic, service and frame names are defined once (rynn_common.ros_names): no package source or
benchmark spells one as a string literal. Tests may: they pin the public names users rely on."""

from __future__ import annotations

import ast

from ros_test_tools import REPO_ROOT
from rynn_common import ros_names

NAMES = {value: name for name, value in vars(ros_names).items() if name.isupper() and isinstance(value, str)}
NAMES.update({value: f"RECORDER_SERVICES[{action!r}]" for action, value in ros_names.RECORDER_SERVICES.items()})


def name_literals(path):
    """(line, literal, constant) of every string constant in ``path`` that is one of the shared names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [(node.lineno, node.value, NAMES[node.value]) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES]


def test_the_shared_names_are_spelt_once():
    sources = [*REPO_ROOT.glob("src/*/*/**/*.py"), *REPO_ROOT.glob("benchmarks/*.py"), *REPO_ROOT.glob("scripts/*.py")]
    sources = [path for path in sources if "test" not in path.relative_to(REPO_ROOT).parts[2:3]]
    assert len(sources) > 100
    found = [f"{path.relative_to(REPO_ROOT)}:{line}: {literal!r} (use {constant})"
             for path in sources if path.name != "ros_names.py" for line, literal, constant in name_literals(path)]
    assert found == []


def test_a_literal_is_found(tmp_path):
    path = tmp_path / "node.py"
    path.write_text('"""Publishes /rynn/action."""\ntopic = "/rynn/action"\nframe = f"{topic}/x"\n')
    assert name_literals(path) == [(2, "/rynn/action", "ACTION_TOPIC")]
