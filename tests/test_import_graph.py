"""The import graph of ``ruleengine``, ``agent`` and ``backends`` has no cycle, and no package
reaches into another's private modules.

The graph is read from the source with ``ast``, not by importing: every ``import`` and
``from … import`` counts, wherever it stands (module level, under ``if TYPE_CHECKING:``,
inside a function), relative ones resolved against the importing module's package. ``from pkg
import name`` imports the submodule ``pkg.name`` when there is one, else ``pkg`` itself;
importing ``a.b.c`` does not count as importing the packages ``a`` and ``a.b`` (every module
would then sit on a cycle through its package's ``__init__``).

A module is private when a part of its dotted name starts with one underscore
(``ruleengine._validate``, ``ruleengine.policy._yaml``); only the package that part sits in,
and that package's modules, may import it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Set
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ruleengine", "agent", "backends")

Graph = Mapping[str, frozenset[str]]
"""Each module's dotted name, mapped to the modules of ours it imports."""


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module of ``packages`` (directories under ``root``), by dotted name."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imported(
    name: str, path: Path, node: ast.Import | ast.ImportFrom, known: Set[str]
) -> set[str]:
    """The modules of ours one import statement imports."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    if node.level:
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        if node.level > len(package):
            raise ValueError(f"{path}:{node.lineno}: a relative import leaves the packages")
        base = package[: len(package) - node.level + 1]
        source = ".".join([*base, node.module] if node.module else base)
    else:
        source = node.module or ""
    found = set()
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        if submodule in known:
            found.add(submodule)
        elif source in known:
            found.add(source)
    return found


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, frozenset[str]]:
    """What each module of ``packages`` imports, among those packages' modules."""
    files = module_files(root, packages)
    known = files.keys()
    graph: dict[str, frozenset[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                edges |= _imported(name, path, node, known)
        edges.discard(name)
        graph[name] = frozenset(edges)
    return graph


def tangles(graph: Graph) -> list[set[str]]:
    """The strongly connected components that hold a cycle: sets of modules each of which
    imports, directly or not, every other (or a module that imports itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(start: str) -> None:
        # Tarjan's algorithm, iterative: the graph may be deeper than the recursion limit.
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [c for c in components if len(c) > 1 or min(c) in graph.get(min(c), ())]


def cycles(graph: Graph) -> list[list[str]]:
    """The shortest cycle through the first module (by name) of each tangle, as the modules in
    import order, that module repeated at the end; sorted, so a failure reads the same."""
    return sorted(_shortest_cycle(graph, min(t), t) for t in tangles(graph))


def _shortest_cycle(graph: Graph, start: str, within: set[str]) -> list[str]:
    """The shortest path from ``start`` back to itself inside one component (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph.get(node, ())):
                if target not in within:
                    continue
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"{start} is on no cycle")  # pragma: no cover - a component has one


def owner_of_private(module: str) -> str | None:
    """The package a private module belongs to (the part before its first ``_name`` part), or
    ``None`` for a public module. Dunder parts (``__main__``) are not private."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def private_imports(graph: Graph) -> list[tuple[str, str]]:
    """Each ``(importer, imported)`` where ``imported`` is private to a package that does not
    hold ``importer``."""
    found = []
    for importer, targets in graph.items():
        for target in targets:
            owner = owner_of_private(target)
            if owner is not None and not (importer == owner or importer.startswith(owner + ".")):
                found.append((importer, target))
    return sorted(found)


# -- the project -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> dict[str, frozenset[str]]:
    return import_graph(ROOT, PACKAGES)


def test_the_walker_sees_the_whole_project(graph: Graph) -> None:
    # Guards against a vacuous pass: a walker that found no module or no import has no cycle.
    assert {"ruleengine", "ruleengine.errors", "agent.runner", "backends.model"} <= set(graph)
    assert "ruleengine.errors" in graph["ruleengine.reasoner"]
    assert "agent.loop" in graph["agent.runner"]


def test_there_is_no_import_cycle(graph: Graph) -> None:
    found = []
    for tangle in sorted(tangles(graph), key=min):
        cycle = _shortest_cycle(graph, min(tangle), tangle)
        rest = sorted(tangle - set(cycle))
        found.append(" → ".join(cycle) + (f" (tangled with {', '.join(rest)})" if rest else ""))
    assert not found, "import cycles:\n" + "\n".join(found)


def test_no_package_imports_another_packages_private_module(graph: Graph) -> None:
    found = private_imports(graph)
    assert not found, "private modules imported from outside their package:\n" + "\n".join(
        f"{importer} imports {imported}" for importer, imported in found
    )


# -- the walker itself, on a package made for it ---------------------------------------------


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


SYNTHETIC = {
    "pkg/__init__.py": "from pkg.top import Top\n",
    "pkg/top.py": "from . import low\nfrom .low import helper\n",
    # The way back is only under TYPE_CHECKING: still an edge.
    "pkg/low.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.top import Top\n"
        "def helper():\n"
        "    from ._hidden import secret\n"
        "    return secret\n"
    ),
    "pkg/_hidden.py": "secret = 1\n",
    "pkg/sub/__init__.py": "",
    "pkg/sub/deep.py": "from .. import _hidden\nfrom ..sub import _inner\n",
    "pkg/sub/_inner.py": "",
    "pkg/alone.py": "import pkg.alone\n",
    "other/__init__.py": "",
    # A function-local import of a private module, and a name (not a module) from a package.
    "other/user.py": "def f():\n    from pkg import _hidden, Top\n    import pkg.sub._inner\n",
    "other/public.py": "import os\nfrom pkg import top\n",
}


def test_the_walker_resolves_every_form_of_import(tmp_path: Path) -> None:
    _write(tmp_path, SYNTHETIC)
    got = import_graph(tmp_path, ["pkg", "other"])
    assert got == {
        "pkg": {"pkg.top"},
        "pkg.top": {"pkg.low"},
        "pkg.low": {"pkg.top", "pkg._hidden"},
        "pkg._hidden": set(),
        "pkg.sub": set(),
        "pkg.sub.deep": {"pkg._hidden", "pkg.sub._inner"},
        "pkg.sub._inner": set(),
        "pkg.alone": set(),
        "other": set(),
        "other.user": {"pkg._hidden", "pkg", "pkg.sub._inner"},
        "other.public": {"pkg.top"},
    }


def test_the_walker_names_each_cycle_and_each_private_import(tmp_path: Path) -> None:
    _write(tmp_path, SYNTHETIC)
    got = import_graph(tmp_path, ["pkg", "other"])
    assert cycles(got) == [["pkg.low", "pkg.top", "pkg.low"]]
    assert tangles(got) == [{"pkg.low", "pkg.top"}]
    assert private_imports(got) == [("other.user", "pkg._hidden"), ("other.user", "pkg.sub._inner")]


def test_cycles_are_found_whatever_their_length() -> None:
    ring = {f"m{i}": frozenset({f"m{(i + 1) % 5}"}) for i in range(5)}
    assert cycles(ring) == [["m0", "m1", "m2", "m3", "m4", "m0"]]
    assert cycles({"a": frozenset({"a"}), "b": frozenset()}) == [["a", "a"]]
    two = {"a": frozenset({"b"}), "b": frozenset({"a"}), "c": frozenset({"d"}), "d": frozenset()}
    assert cycles(two) == [["a", "b", "a"]]
    # One tangle of three, the shortest cycle through its first module named.
    three = {"a": frozenset({"b", "c"}), "b": frozenset({"a"}), "c": frozenset({"b"})}
    assert tangles(three) == [{"a", "b", "c"}] and cycles(three) == [["a", "b", "a"]]
    # Deeper than the recursion limit: the search is iterative.
    chain = {f"n{i:05}": frozenset({f"n{i + 1:05}"}) for i in range(5000)}
    assert cycles(chain) == []
    assert owner_of_private("ruleengine.__main__") is None
    assert owner_of_private("ruleengine.policy._yaml") == "ruleengine.policy"
