"""mrtrweb uses other libraries through their public names only: no attribute or import of
theirs that starts with one underscore (dunders and what Django documents as public, such as
``Model._meta``, ``_default_manager``, ``_base_manager`` and ``_state``, aside), no override
of a private Django method, no compiler patched. A private name may change or go in any
release without notice; this fails on a new use, file:line.

The check is static, over every module of ``mrtrweb/`` (migrations aside). An underscore
attribute counts as mrtrweb's own when mrtrweb defines it: a function, class, variable or
argument of that name, or an attribute set on ``self``/``cls``. One set on another library's
object (a user, a response, a form) is not: that object's class owns its underscores.
"""

from __future__ import annotations

import ast
from pathlib import Path

MRTRWEB = Path(__file__).resolve().parents[2] / "mrtrweb"

DOCUMENTED = frozenset({"_", "_meta", "_default_manager", "_base_manager", "_state"})
# Private methods of Django's that an app's subclass could override.
OVERRIDES = frozenset(
    {"_get_session_from_db", "_origin_verified", "_save_table", "_do_insert", "_do_update"}
)
# What a compiler is patched through.
COMPILER = frozenset({"as_sql", "get_compiler", "get_converters"})
REFLECTION = frozenset({"getattr", "hasattr", "setattr", "delattr"})


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in DOCUMENTED


def trees(root: Path) -> dict[Path, ast.Module]:
    return {
        path: ast.parse(path.read_text(), str(path))
        for path in sorted(root.rglob("*.py"))
        if "migrations" not in path.relative_to(root).parts
    }


def defined_names(modules: dict[Path, ast.Module]) -> set[str]:
    names: set[str] = set()
    for tree in modules.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[0])
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
    return names


def uses(root: Path) -> list[tuple[str, int, str, str]]:
    """(file under ``root``, line, the name, what the use is) of every private name used."""
    modules = trees(root)
    ours = defined_names(modules)
    found = []
    for path, tree in modules.items():
        where = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.Attribute):
                if private(node.attr) and node.attr not in ours:
                    found.append((where, line, node.attr, f".{node.attr}"))
                elif isinstance(node.ctx, ast.Store) and node.attr in COMPILER:
                    found.append((where, line, node.attr, f"patches .{node.attr}"))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in REFLECTION
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and private(node.args[1].value)
                and node.args[1].value not in ours
            ):
                name = node.args[1].value
                found.append((where, line, name, f"{node.func.id}({name!r})"))
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if node.module.split(".")[0] == root.name:
                    continue
                if any(private(part) for part in node.module.split(".")):
                    found.append((where, line, node.module, f"from {node.module}"))
                for alias in node.names:
                    if private(alias.name):
                        found.append((where, line, alias.name, f"import {alias.name}"))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if any(private(part) for part in alias.name.split(".")):
                        found.append((where, line, alias.name, f"import {alias.name}"))
            elif (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in OVERRIDES
            ):
                found.append((where, line, node.name, f"overrides {node.name}"))
    return found


def test_no_private_name_of_another_library() -> None:
    found = [f"mrtrweb/{where}:{line} {what}" for where, line, _, what in uses(MRTRWEB)]
    assert found == [], "private names of other libraries:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_use(tmp_path: Path) -> None:
    """Each kind of use the check is for, written in a package of its own, is found; what
    the package defines itself, and Django's documented underscores, are not."""
    package = tmp_path / "app"
    package.mkdir()
    (package / "uses.py").write_text(
        "from mcp_types._v2026_07_28 import BooleanSchema\n"
        "from django.db.models.base import _save_table_helper\n"
        "import channels._private\n"
        "class Store(SessionStore):\n"
        "    def _get_session_from_db(self): ...\n"
        "def run(queryset, compiler, middleware, user, request):\n"
        "    compiler.as_sql = lambda: ('', ())\n"
        "    middleware._origin_verified(request)\n"
        "    user._perm_cache = set()\n"
        "    return queryset._known_related_objects, getattr(request, '_cached_user', None)\n"
    )
    (package / "own.py").write_text(
        "class Mine:\n"
        "    def __init__(self, model):\n"
        "        self._kept = {}\n"
        "        self.name = model._meta.label, model._default_manager, model._state\n"
        "    def _helper(self):\n"
        "        return self._kept, self.__class__\n"
    )
    found = {(where, what) for where, _, _, what in uses(package)}
    assert found == {
        ("uses.py", "from mcp_types._v2026_07_28"),
        ("uses.py", "import _save_table_helper"),
        ("uses.py", "import channels._private"),
        ("uses.py", "overrides _get_session_from_db"),
        ("uses.py", "patches .as_sql"),
        ("uses.py", "._origin_verified"),
        ("uses.py", "._perm_cache"),
        ("uses.py", "._known_related_objects"),
        ("uses.py", "getattr('_cached_user')"),
    }
