"""The import graph of the suite's ROS packages, derived from their sources with ``ast``.

Each package under ``src/`` (one ``package.xml``) owns the Python files of its module directory
(checked against its run dependencies) and of its ``test/`` directory (run and test
dependencies). An import of a sibling package, or of a ROS package of the ament index, must be
declared in ``package.xml``; the graph of sibling imports must have no cycle.

``python test/support/package_graph.py [REPO_ROOT]`` prints the graph and the problems of any
checkout (e.g. an old commit, for a before/after comparison); exit status 1 when there are any.
"""

from __future__ import annotations

import ast
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

RUN_DEPENDS = ("depend", "exec_depend", "build_export_depend")
TEST_DEPENDS = ("test_depend",)
DYNAMIC_IMPORTS = {"import_module", "importorskip", "find_spec"}  # calls that import a module named by a constant


@dataclass(frozen=True)
class Package:
    name: str
    directory: Path
    run_depends: frozenset
    test_depends: frozenset


@dataclass(frozen=True)
class Import:
    importer: str  # the package whose file imports
    imported: str  # the top-level module, a package name
    path: Path
    line: int
    in_test: bool


@dataclass
class PackageGraph:
    packages: dict  # name -> Package
    imports: list = field(default_factory=list)  # Import of a sibling or a ROS package

    def edges(self, in_test: bool = False) -> dict[tuple[str, str], int]:
        """(importer, sibling) -> number of import statements, sources only or tests only."""
        counts = defaultdict(int)
        for item in self.imports:
            if item.in_test == in_test and item.imported in self.packages and item.imported != item.importer:
                counts[(item.importer, item.imported)] += 1
        return dict(sorted(counts.items()))

    def undeclared(self) -> list[Import]:
        """Imports of a sibling or ROS package that the importer's package.xml does not declare."""
        found = []
        for item in self.imports:
            package = self.packages[item.importer]
            declared = package.run_depends | (package.test_depends if item.in_test else frozenset())
            if item.imported != item.importer and item.imported not in declared:
                found.append(item)
        return found

    def cycles(self) -> list[list[str]]:
        """Every cycle of the sibling graph (sources and tests together: colcon orders by both)."""
        successors = defaultdict(set)
        for importer, imported in [*self.edges(False), *self.edges(True)]:
            successors[importer].add(imported)
        found, seen = [], set()

        def visit(node: str, trail: list[str]) -> None:
            for successor in sorted(successors[node]):
                if successor in trail:
                    cycle = trail[trail.index(successor):]
                    key = frozenset(cycle)
                    if key not in seen:
                        seen.add(key)
                        found.append([*cycle, successor])
                else:
                    visit(successor, [*trail, successor])

        for start in sorted(successors):
            visit(start, [start])
        return found

    def report(self) -> str:
        lines = ["package import graph (importer -> imported: import statements)"]
        for title, in_test in (("sources", False), ("tests", True)):
            lines.append(f"  {title}:")
            edges = self.edges(in_test)
            lines += [f"    {importer} -> {imported}: {count}" for (importer, imported), count in edges.items()]
            if not edges:
                lines.append("    (none)")
        cycles = self.cycles()
        lines.append("  cycles: " + ("; ".join(" -> ".join(cycle) for cycle in cycles) if cycles else "none"))
        undeclared = self.undeclared()
        lines.append(f"  undeclared imports: {len(undeclared) or 'none'}")
        lines += [f"    {item.path}:{item.line}: {item.importer} imports {item.imported}"
                  f" ({'test' if item.in_test else 'source'}), not in its package.xml" for item in undeclared]
        return "\n".join(lines)


def read_package(manifest: Path) -> Package:
    root = ET.parse(manifest).getroot()

    def names(tags) -> frozenset:
        return frozenset(element.text.strip() for tag in tags for element in root.iter(tag) if element.text)

    return Package(root.findtext("name").strip(), manifest.parent, names(RUN_DEPENDS), names(TEST_DEPENDS))


def imported_modules(path: Path) -> list[tuple[str, int]]:
    """(top-level module, line) of every absolute import in a Python file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name.split(".")[0], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], node.lineno))
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and node.args
              and getattr(node.func, "attr", getattr(node.func, "id", "")) in DYNAMIC_IMPORTS
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.args[0].value.split(".")[0], node.lineno))
    return found


def ament_index_packages(prefix: Path) -> frozenset:
    """The ROS packages installed in ``prefix`` (empty when it has no ament index)."""
    index = prefix / "share" / "ament_index" / "resource_index" / "packages"
    return frozenset(path.name for path in index.iterdir()) if index.is_dir() else frozenset()


def package_graph(repo_root: Path, ros_packages: frozenset = frozenset()) -> PackageGraph:
    """The graph of ``repo_root/src``; imports of ``ros_packages`` (and of siblings) are checked."""
    packages = {package.name: package for package in map(read_package, sorted((repo_root / "src").glob("*/package.xml")))}
    checked = set(packages) | set(ros_packages)
    graph = PackageGraph(packages)
    for package in packages.values():
        for directory, in_test in ((package.directory / package.name, False), (package.directory / "test", True)):
            for path in sorted(directory.rglob("*.py")) if directory.is_dir() else []:
                graph.imports += [Import(package.name, module, path.relative_to(repo_root), line, in_test)
                                  for module, line in imported_modules(path) if module in checked]
    return graph


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2]
    graph = package_graph(root, ament_index_packages(Path(sys.prefix)))
    print(graph.report())
    return 1 if graph.cycles() or graph.undeclared() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
