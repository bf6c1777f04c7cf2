"""Every guarded status update of the engine goes through ``engine.transition`` (or
``transition_call``): the one place that decides who won a race (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import mrtrweb

ENGINE = Path(mrtrweb.__file__).resolve().parent / "calls" / "engine"


def _guards_on_status(node: ast.AST) -> bool:
    """Whether a query chain filters (or excludes) on ``status``."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in {"filter", "exclude"} and any(
            (keyword.arg or "").startswith("status") for keyword in node.keywords
        ):
            return True
        node = node.func.value
    return False


def guarded_updates(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.Call):
            continue
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and _guards_on_status(node.func.value)
        ):
            lines.append(node.lineno)
    return lines


def test_no_module_of_the_engine_writes_its_own_guarded_update() -> None:
    found = {
        path.name: guarded_updates(path)
        for path in sorted(ENGINE.glob("*.py"))
        if path.name != "transitions.py"
    }
    assert not {name: lines for name, lines in found.items() if lines}


def test_the_check_sees_a_hand_written_one(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "Round.objects.filter(pk=1, status='pending').update(status='submitted')\n"
        "Call.objects.filter(pk=1).exclude(status__in=DONE).update(error='x')\n"
        "Call.objects.filter(pk=1).update(progress={})\n"
    )
    assert guarded_updates(module) == [1, 2]
