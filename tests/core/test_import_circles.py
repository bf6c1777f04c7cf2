"""No import circles in ``mrtrweb/`` (docs/architecture.md, "Layers").

A circle, even one hidden in a function-level import, means two modules that cannot be read,
tested or moved one without the other, and an import order that works by luck. This parses
every module (it imports none of them), takes every ``import`` it runs, at module level or
inside a function, with relative imports resolved, and fails on any cycle, naming it.

``from package import name`` counts as an import of ``package.name`` when that is a module,
else of ``package``; imports under ``if TYPE_CHECKING:`` are left out (they never run).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mrtrweb
from tests.support.imports import import_base

PACKAGE_ROOT = Path(mrtrweb.__file__).resolve().parent
SOURCE_ROOT = PACKAGE_ROOT.parent


def all_modules() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        parts = list(path.relative_to(SOURCE_ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (n for child in node.orelse for n in _import_nodes_of(child))
            continue
        yield from _import_nodes_of(node)


def _import_nodes_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _import_nodes(node)


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The ``mrtrweb`` modules ``module`` imports, anywhere in its body."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = import_base(module, is_package, node)
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        for name in names:
            # ``import a.b.c`` names a.b.c; an attribute path falls back to its module.
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    known = set(modules)
    return {module: imports_of(module, path, known) for module, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module
    (Tarjan's algorithm, iterative), e.g. ``[a, b, a]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return [_cycle_in(graph, set(component)) for component in components]


def _cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the first module of ``component`` (breadth first)."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & component):
            if child == start:
                return [*paths[node], start]
            if child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    raise AssertionError(f"no cycle through {start}")  # a component always has one


def test_no_module_of_mrtrweb_imports_itself_back_through_others() -> None:
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" → ".join(c) for c in found)


def test_the_circle_finder_finds_a_function_level_circle(tmp_path: Path) -> None:
    """The check itself: a circle closed inside a function, through a relative import."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def f():\n    from .a import thing\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
    )
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c"}
    graph = {
        name: imports_of(
            name,
            package / ("__init__.py" if name == "pkg" else f"{name.split('.')[-1]}.py"),
            known,
        )
        for name in known
    }
    assert graph["pkg.c"] == set()
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]
