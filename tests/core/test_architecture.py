"""The layer table of docs/architecture.md, enforced: one entry of ``RULES`` a row.

Each rule names a package (or module) of mrtrweb, what it must not import (dotted prefixes;
``*`` matches any part, so ``mrtrweb.*.views`` is every app's views), exceptions, and for the
bottom packages the only third-party roots they may use (the standard library is always
allowed). The check is static: every ``import`` statement in every module, at module level or
inside a function, relative imports resolved, reported as file:line. Imports within the
rule's own package never count.

A new package gets a row here and in the table (``test_every_package_has_a_row`` insists).
A rule waiting on another branch carries ``pending``: it runs as a strict xfail, so once that
branch is merged and the rule holds, the test fails until ``pending`` is removed.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

import mrtrweb
from tests.support.imports import import_base

PACKAGE_ROOT = Path(mrtrweb.__file__).resolve().parent
SOURCE_ROOT = PACKAGE_ROOT.parent
STDLIB = frozenset(sys.stdlib_module_names)

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

VIEWS = "mrtrweb.*.views"  # any app's web views (an app's own never count)
# The pages and programs' ends: nothing below them imports them.
ENDS = (
    "mrtrweb.api",
    "mrtrweb.webhooks",
    "mrtrweb.accounts",
    "mrtrweb.core",
    "mrtrweb.dashboard",
    "mrtrweb.inbox",
    "mrtrweb.starting",
)


@dataclass(frozen=True)
class Rule:
    package: str
    must_not: tuple[str, ...]
    allow: tuple[str, ...] = ()  # imports that are fine although must_not matches them
    third_party: frozenset[str] | None = None  # None: any third-party package
    except_in: tuple[str, ...] = ()  # modules of the package the rule does not cover
    pending: str = ""  # who switches the rule on, and when


def only(*roots: str) -> frozenset[str]:
    return frozenset(roots)


RULES = [
    # -- the bottom: no Django, or only the parts named ---------------------------------------
    Rule(
        "mrtrweb.mcp",
        ("mrtrweb",),
        third_party=only("httpx", "httpx_sse", "mcp_types", "pydantic", "asgiref"),
    ),
    Rule("mrtrweb.mcp", ("asgiref",), except_in=("mrtrweb.mcp.io_loop",)),
    # OAuth beside mcp: authlib (and its joserfc, cryptography) on httpx; mcp only for the
    # Authenticator it implements (headless) and the error that says authorization is needed.
    Rule(
        "mrtrweb.oauth",
        ("mrtrweb",),
        allow=("mrtrweb.mcp",),
        third_party=only("httpx", "authlib", "joserfc", "cryptography"),
    ),
    # Where mrtrweb may connect when someone else chose the address: webhooks and OAuth.
    Rule("mrtrweb.netguard", ("mrtrweb",), third_party=only("httpx", "httpcore")),
    Rule(
        "mrtrweb.elicitation",
        ("mrtrweb", "django.db", "django.contrib", "django.views", "django.http", "django.urls"),
        third_party=only("django", "mcp_types", "pydantic"),
    ),
    Rule("mrtrweb.people", ("mrtrweb",), third_party=only("django")),
    Rule("mrtrweb.formats", ("mrtrweb",), third_party=only()),
    Rule("mrtrweb.encryption", ("mrtrweb",), third_party=only("django", "cryptography")),
    Rule("mrtrweb.http", ("mrtrweb",), third_party=only("django")),
    Rule("mrtrweb.db", ("mrtrweb",), third_party=only("django")),
    Rule("mrtrweb.env", ("mrtrweb",), third_party=only("dj_database_url")),
    Rule("mrtrweb.settings", ("mrtrweb",), allow=("mrtrweb.env",)),
    Rule(
        "mrtrweb.demo",
        ("mrtrweb",),
        third_party=only("fastmcp", "mcp", "mcp_types", "pydantic", "starlette"),
    ),
    # -- the apps -----------------------------------------------------------------------------
    Rule(
        "mrtrweb.servers",
        (
            "mrtrweb.authorizations",
            "mrtrweb.policies",
            "mrtrweb.calls",
            "mrtrweb.live",
            "mrtrweb.elicitation",
            *ENDS,
        ),
    ),
    # Beside authorizations, above servers, below calls: the engine reads its snapshot and
    # asks it for delegations; it never asks the engine.
    Rule(
        "mrtrweb.policies",
        ("mrtrweb.calls", "mrtrweb.authorizations", "mrtrweb.live", VIEWS, *ENDS),
    ),
    # Above servers, below calls: the engine asks it for the caller's credentials.
    Rule(
        "mrtrweb.authorizations",
        ("mrtrweb.calls", "mrtrweb.live", "mrtrweb.elicitation", VIEWS, *ENDS),
    ),
    Rule("mrtrweb.calls", (VIEWS, *ENDS)),
    Rule("mrtrweb.calls", ("mrtrweb.live",), except_in=("mrtrweb.calls.views",)),
    Rule(
        "mrtrweb.live",
        ("mrtrweb.calls.engine", VIEWS, *(end for end in ENDS if end != "mrtrweb.accounts")),
    ),
    Rule(
        "mrtrweb.api",
        (
            VIEWS,
            "mrtrweb.live",
            "mrtrweb.accounts",
            "mrtrweb.core",
            "mrtrweb.dashboard",
            "mrtrweb.inbox",
        ),
    ),
    Rule(
        "mrtrweb.webhooks",
        ("mrtrweb.calls", "mrtrweb.api", "mrtrweb.servers", "mrtrweb.live", VIEWS, *ENDS),
        # The engine for `engine.note` only (audit entries), the token for its secret.
        allow=(
            "mrtrweb.calls.models",
            "mrtrweb.calls.signals",
            "mrtrweb.calls.engine",
            "mrtrweb.api.models",
        ),
    ),
    Rule(
        "mrtrweb.accounts",
        ("mrtrweb.calls", "mrtrweb.servers", "mrtrweb.live", VIEWS, *ENDS),
    ),
    Rule("mrtrweb.dashboard", (VIEWS, "mrtrweb.api", "mrtrweb.webhooks", "mrtrweb.inbox")),
    Rule("mrtrweb.inbox", (VIEWS, "mrtrweb.api", "mrtrweb.webhooks", "mrtrweb.dashboard")),
    Rule(
        "mrtrweb.starting",
        (VIEWS, "mrtrweb.api", "mrtrweb.webhooks", "mrtrweb.dashboard", "mrtrweb.inbox"),
    ),
    # -- the top ------------------------------------------------------------------------------
    Rule("mrtrweb.core", (VIEWS,)),
    Rule("mrtrweb.asgi", ("mrtrweb",), allow=("mrtrweb.live", "mrtrweb.core.request_threads")),
]

# The top: they wire everything together, so no rule limits them.
NO_RULE = frozenset({"mrtrweb", "mrtrweb.urls", "mrtrweb.wsgi"})


def modules_of(package: str) -> Iterator[tuple[str, Path]]:
    folder = SOURCE_ROOT.joinpath(*package.split("."))
    single = folder.with_suffix(".py")
    paths = [single] if single.is_file() else sorted(folder.rglob("*.py"))
    for path in paths:
        parts = list(path.relative_to(SOURCE_ROOT).with_suffix("").parts)
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
            base = import_base(module, is_package, node)
            # The most specific name: `from mrtrweb import mcp` is fine, `from .. import core`
            # is not, and both have the same base.
            for alias in node.names:
                yield node.lineno, base if alias.name == "*" else f"{base}.{alias.name}"


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _matches(name: str, pattern: str) -> bool:
    parts = name.split(".")
    return any(fnmatchcase(".".join(parts[:n]), pattern) for n in range(1, len(parts) + 1))


def violation(rule: Rule, imported: str) -> str | None:
    """Why ``imported`` breaks ``rule`` in a module of its package, or ``None``."""
    if _within(imported, rule.package):
        return None
    root = imported.split(".")[0]
    third_party = rule.third_party
    if third_party is not None and root not in {"mrtrweb", *STDLIB, *third_party}:
        return f"third-party {root!r}, not one of {sorted(third_party)}"
    if any(_within(imported, allowed) for allowed in rule.allow):
        return None
    for pattern in rule.must_not:
        if _matches(imported, pattern):
            return f"must not import {pattern}"
    return None


def problems_of(rule: Rule) -> list[str]:
    problems = []
    for module, path in modules_of(rule.package):
        if any(_within(module, skipped) for skipped in rule.except_in):
            continue
        for lineno, imported in imported_modules(module, path):
            why = violation(rule, imported)
            if why:
                problems.append(f"{path.relative_to(SOURCE_ROOT)}:{lineno}: {imported} ({why})")
    return problems


def _rule_id(rule: Rule) -> str:
    return f"{rule.package}-{'+'.join(rule.must_not)}"


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param(
            rule,
            id=_rule_id(rule),
            marks=[pytest.mark.xfail(strict=True, reason=rule.pending)] if rule.pending else [],
        )
        for rule in RULES
    ],
)
def test_layer_rule(rule: Rule) -> None:
    assert any(True for _ in modules_of(rule.package)), f"{rule.package} has no modules"
    problems = problems_of(rule)
    assert not problems, f"{rule.package} breaks its row of the layer table:\n" + "\n".join(
        problems
    )


def test_every_package_has_a_row() -> None:
    ruled = {rule.package for rule in RULES}
    tops = {
        f"mrtrweb.{path.stem if path.suffix == '.py' else path.name}"
        for path in PACKAGE_ROOT.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__")
        or (path.is_dir() and (path / "__init__.py").is_file())
    }
    missing = sorted(tops - ruled - NO_RULE)
    assert not missing, f"add a row to RULES and to docs/architecture.md for: {missing}"


@pytest.mark.parametrize("package", ["mrtrweb.mcp", "mrtrweb.oauth", "mrtrweb.netguard"])
def test_importing_every_protocol_module_loads_no_django(package: str) -> None:
    # The AST check sees our own statements; this catches a dependency that drags Django in.
    script = f"""
import importlib, json, pkgutil, sys
import {package} as pkg
for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
    importlib.import_module(info.name)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {sorted(DJANGO_WORLD)!r})))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


# -- the checker itself ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "module", "is_package", "expected"),
    [
        ("import django.db", "mrtrweb.mcp.x", False, ["django.db"]),
        ("from .. import core", "mrtrweb.mcp.x", False, ["mrtrweb.core"]),
        ("from mrtrweb import mcp", "mrtrweb.mcp.x", False, ["mrtrweb.mcp"]),
        ("from . import errors", "mrtrweb.mcp", True, ["mrtrweb.mcp.errors"]),
        ("from ..mcp.errors import *", "mrtrweb.mcp.x", False, ["mrtrweb.mcp.errors"]),
        ("from .errors import E", "mrtrweb.mcp.x", False, ["mrtrweb.mcp.errors.E"]),
        (
            "def f():\n    from mrtrweb.calls import roles",
            "mrtrweb.servers.x",
            False,
            ["mrtrweb.calls.roles"],
        ),
    ],
)
def test_import_resolution(tmp_path: Path, source, module, is_package, expected) -> None:
    path = tmp_path / ("__init__.py" if is_package else "x.py")
    path.write_text(source + "\n")
    assert [name for _, name in imported_modules(module, path)] == expected


MCP_RULE = RULES[0]
SERVERS_RULE = next(rule for rule in RULES if rule.package == "mrtrweb.servers")
WEBHOOKS_RULE = next(rule for rule in RULES if rule.package == "mrtrweb.webhooks")


@pytest.mark.parametrize(
    ("rule", "imported", "bad"),
    [
        (MCP_RULE, "django.conf", True),
        (MCP_RULE, "channels.layers", True),
        (MCP_RULE, "mrtrweb.core.views", True),
        (MCP_RULE, "mrtrweb", True),
        (MCP_RULE, "mrtrweb.mcp.errors", False),
        (MCP_RULE, "httpx", False),
        (MCP_RULE, "mcp_types", False),
        (MCP_RULE, "json.decoder", False),
        (SERVERS_RULE, "mrtrweb.calls.roles.is_admin", True),
        (SERVERS_RULE, "mrtrweb.people.roles.is_admin", False),
        (SERVERS_RULE, "mrtrweb.api.views", True),
        (SERVERS_RULE, "mrtrweb.inbox.views", True),
        (SERVERS_RULE, "django.db.models", False),
        (WEBHOOKS_RULE, "mrtrweb.calls.models.Call", False),
        (WEBHOOKS_RULE, "mrtrweb.calls.admin.ReadOnlyAdmin", True),
        (WEBHOOKS_RULE, "mrtrweb.calls.views", True),
        (WEBHOOKS_RULE, "mrtrweb.servers.views", True),
    ],
)
def test_violation_rules(rule: Rule, imported: str, bad: bool) -> None:
    assert (violation(rule, imported) is not None) is bad


def test_a_violation_names_the_file_and_line(tmp_path: Path, monkeypatch) -> None:
    package = tmp_path / "mrtrweb" / "servers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "views.py").write_text("import json\n\nfrom mrtrweb.calls.roles import is_admin\n")
    monkeypatch.setattr(sys.modules[__name__], "SOURCE_ROOT", tmp_path)
    assert problems_of(SERVERS_RULE) == [
        "mrtrweb/servers/views.py:3: mrtrweb.calls.roles.is_admin (must not import mrtrweb.calls)"
    ]
