"""netguard reaches into no library's private names: no underscore module or name imported
from another package, no underscore attribute read on anything but its own objects."""

from __future__ import annotations

import ast
from pathlib import Path

import mrtrweb.netguard

PACKAGE = Path(mrtrweb.netguard.__file__).parent


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and private(node.attr):
            own = isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}
            if not own:
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [*(node.module or "").split("."), *(alias.name for alias in node.names)]
            found += [f"line {node.lineno}: {name}" for name in names if private(name)]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found += [
                    f"line {node.lineno}: {part}" for part in alias.name.split(".") if private(part)
                ]
    return found


def test_the_check_sees_what_it_should() -> None:
    source = (
        "import httpx._models\nfrom httpx._config import X\nfrom httpcore import _sync\n"
        "from .addresses import _allowed\n"
        "t._pool = p\nself._inner.connect()\nx.__class__\nself.a._b\n"
    )
    assert private_uses(source) == [
        "line 1: _models",
        "line 2: _config",
        "line 3: _sync",
        "line 5: ._pool",
        "line 8: ._b",
    ]


def test_netguard_uses_no_private_name_of_another_library() -> None:
    found = {
        path.name: uses
        for path in sorted(PACKAGE.glob("*.py"))
        if (uses := private_uses(path.read_text()))
    }
    assert found == {}
