"""Reading a module's imports without importing it: the architecture tests share this."""

from __future__ import annotations

import ast


def import_base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` statement in ``module`` imports from, with a relative
    import (``from ..x import y``) resolved against ``module`` (a package's ``__init__`` is
    its own anchor)."""
    if node.level == 0:
        return node.module or ""
    anchor = module.split(".")
    if not is_package:
        anchor.pop()
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, node.module] if node.module else anchor)
