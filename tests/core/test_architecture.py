"""The import rules of docs/architecture.md, enforced.

``mrtrweb.mcp`` is the protocol client: pure Python on httpx and mcp-types. It must not import
Django (or anything built on it), nor any other part of mrtrweb.
"""

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mrtrweb

PACKAGE_ROOT = Path(mrtrweb.__file__).resolve().parent
MCP = "mrtrweb.mcp"
# Django and the libraries that need a configured Django.
DJANGO_WORLD = frozenset(
    {
        "django",
        "channels",
        "channels_redis",
        "daphne",
        "django_htmx",
        "django_tasks",
        "django_tasks_db",
        "dj_database_url",
        "whitenoise",
    }
)


def modules_of(package: str) -> Iterator[tuple[str, Path]]:
    folder = PACKAGE_ROOT.parent.joinpath(*package.split("."))
    for path in sorted(folder.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def imported_modules(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """Every module an ``import`` statement names, relative imports resolved."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                anchor = module.split(".")
                if not is_package:
                    anchor.pop()
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, node.module] if node.module else anchor)
            # The most specific name: `from mrtrweb import mcp` is fine, `from .. import core`
            # is not, and both have the same base.
            for alias in node.names:
                yield node.lineno, base if alias.name == "*" else f"{base}.{alias.name}"


def violation(imported: str) -> str | None:
    top = imported.split(".")[0]
    if top in DJANGO_WORLD:
        return "Django"
    if top == "mrtrweb" and not (imported == MCP or imported.startswith(MCP + ".")):
        return "mrtrweb outside mrtrweb.mcp"
    return None


def test_mcp_package_has_modules_to_check():
    assert any(name == MCP for name, _ in modules_of(MCP))


def test_mcp_imports_nothing_from_django_or_the_rest_of_mrtrweb():
    problems = []
    for module, path in modules_of(MCP):
        for lineno, imported in imported_modules(module, path):
            why = violation(imported)
            if why:
                problems.append(
                    f"{path.relative_to(PACKAGE_ROOT.parent)}:{lineno}: {imported} ({why})"
                )
    assert not problems, "mrtrweb.mcp must stay pure Python:\n" + "\n".join(problems)


def test_importing_every_mcp_module_loads_no_django():
    # The AST check sees our own statements; this catches a dependency that drags Django in.
    script = f"""
import importlib, json, pkgutil, sys
import mrtrweb.mcp as pkg
for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
    importlib.import_module(info.name)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {sorted(DJANGO_WORLD)!r})))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


@pytest.mark.parametrize(
    ("source", "module", "is_package", "expected"),
    [
        ("import django.db", "mrtrweb.mcp.x", False, ["django.db"]),
        ("from .. import core", "mrtrweb.mcp.x", False, ["mrtrweb.core"]),
        ("from mrtrweb import mcp", "mrtrweb.mcp.x", False, ["mrtrweb.mcp"]),
        ("from . import errors", "mrtrweb.mcp", True, ["mrtrweb.mcp.errors"]),
        ("from ..mcp.errors import *", "mrtrweb.mcp.x", False, ["mrtrweb.mcp.errors"]),
        (
            "from .errors import E",
            "mrtrweb.mcp.x",
            False,
            ["mrtrweb.mcp.errors.E"],
        ),
    ],
)
def test_import_resolution(tmp_path: Path, source, module, is_package, expected):
    path = tmp_path / ("__init__.py" if is_package else "x.py")
    path.write_text(source + "\n")
    assert [name for _, name in imported_modules(module, path)] == expected


@pytest.mark.parametrize(
    ("imported", "bad"),
    [
        ("django.conf", True),
        ("channels.layers", True),
        ("mrtrweb.core.views", True),
        ("mrtrweb", True),
        ("mrtrweb.mcp.errors", False),
        ("httpx", False),
        ("mcp_types", False),
    ],
)
def test_violation_rules(imported: str, bad: bool):
    assert (violation(imported) is not None) is bad
