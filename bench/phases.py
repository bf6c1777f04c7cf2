"""Phases that fail alone: one phase's error (a server error, a timeout) is printed and kept
as its figures, and the other phases still run and are reported."""

from __future__ import annotations

import sys
import traceback
from typing import Any

__all__ = ["failed", "guarded", "phase"]


def failed(name: str, exc: BaseException) -> dict[str, Any]:
    # One phase failing (a server error, a timeout) must not lose the others' figures.
    traceback.print_exception(exc, file=sys.stderr)
    return {"error": f"{name} failed: {type(exc).__name__}: {exc}"[:500]}


def phase(name: str, function: Any, *args: Any) -> dict[str, Any]:
    try:
        return function(*args)
    except Exception as exc:
        return failed(name, exc)


async def guarded(name: str, work: Any) -> dict[str, Any]:
    try:
        return await work
    except Exception as exc:
        return failed(name, exc)
