"""Settings are read one way: ``settings.MRTRWEB_X``, with the default in mrtrweb/settings.py.

A ``getattr(settings, name, default)`` (or ``hasattr(settings, ...)``) elsewhere hides a
second default that drifts from the first; these tests fail on a new one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

import mrtrweb
from mrtrweb import env

PACKAGE_ROOT = Path(mrtrweb.__file__).resolve().parent

# mrtrweb/mcp knows nothing of Django: its `settings` are a connection's, not Django's.
NOT_DJANGO = ("mcp/",)


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        name = path.relative_to(PACKAGE_ROOT).as_posix()
        if not name.startswith(NOT_DJANGO):
            yield name, path


def _is_settings(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "settings") or (
        isinstance(node, ast.Attribute) and node.attr == "settings"
    )


def second_defaults(path: Path) -> Iterator[int]:
    """Lines of ``getattr(settings, name, default)`` and ``hasattr(settings, name)``."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.args
            and _is_settings(node.args[0])
            and ((node.func.id == "getattr" and len(node.args) == 3) or node.func.id == "hasattr")
        ):
            yield node.lineno


def test_no_setting_is_read_with_a_second_default() -> None:
    found = [f"mrtrweb/{name}:{line}" for name, path in modules() for line in second_defaults(path)]
    assert not found, (
        "read settings.MRTRWEB_X and put the default in mrtrweb/settings.py:\n" + "\n".join(found)
    )


def test_the_check_sees_a_second_default(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text(
        "from django.conf import settings\n"
        "a = settings.MRTRWEB_A\n"
        "b = getattr(settings, 'MRTRWEB_B', 2)\n"
        "c = getattr(settings, name)\n"
        "def f():\n"
        "    return hasattr(django.conf.settings, 'X')\n"
    )
    assert list(second_defaults(source)) == [3, 6]


def test_every_mrtrweb_setting_read_has_its_default_in_settings() -> None:
    read = {
        match
        for _, path in modules()
        for match in re.findall(r"settings\.(MRTRWEB_[A-Z0-9_]+)", path.read_text())
    }
    # Set by env.oidc only when single sign-on is on, and only read then.
    single_sign_on = set(
        env.oidc(
            {
                "OIDC_RP_CLIENT_ID": "c",
                "OIDC_RP_CLIENT_SECRET": "s",
                "OIDC_OP_ISSUER": "https://idp.example",
            }
        )
    )
    missing = sorted(name for name in read - single_sign_on if not hasattr(settings, name))
    assert read and not missing, f"no default in mrtrweb/settings.py for {missing}"
