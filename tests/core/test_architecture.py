"""Who may import whom (docs/architecture.md, "Layers"), enforced.

The rules are import-linter contracts in pyproject.toml (``[tool.importlinter]``): the layers,
the packages that must stay apart, what each package must not import, and the third-party
packages the bottom ones may use. ``make lint`` runs ``lint-imports`` on them and so does
``test_the_import_contracts_hold``, so ``make test`` fails on a broken one even without the
lint. The layers contract is exhaustive: a new package of ``mrtrweb/`` fails until it has its
place there.

What the contracts cannot say stays here: which parts of Django ``elicitation`` may use (a
contract sees only a library's top-level name), and that importing the protocol packages loads
no Django at run time (the contracts see our import statements; the dependencies' are not ours).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

import mrtrweb

PACKAGE_ROOT = Path(mrtrweb.__file__).resolve().parent
SOURCE_ROOT = PACKAGE_ROOT.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

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

# The third-party packages each bottom package may use: its contract forbids every other
# dependency of the project.
THIRD_PARTY_ALLOWED = {
    "third-party-mcp": {"httpx", "httpx_sse", "mcp_types", "pydantic"},
    "third-party-oauth": {"httpx", "authlib", "joserfc", "cryptography"},
    "third-party-netguard": {"httpx", "httpcore"},
    "third-party-elicitation": {"django", "mcp_types", "pydantic"},
    "third-party-django-only": {"django"},
    "third-party-formats": set(),
    "third-party-encryption": {"django", "cryptography"},
    "third-party-env": {"dj_database_url"},
    "third-party-demo": {"fastmcp", "mcp", "mcp_types", "pydantic", "starlette"},
}


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the ``mrtrweb`` package and pyproject.toml found in ``root``."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def pyproject() -> dict:
    return tomllib.loads((SOURCE_ROOT / "pyproject.toml").read_text())


def test_the_import_contracts_hold() -> None:
    result = lint_imports(SOURCE_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 broken" in result.stdout


@pytest.fixture(scope="module")
def source_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package and its contracts to break."""
    root = tmp_path_factory.mktemp("copy")
    shutil.copytree(PACKAGE_ROOT, root / "mrtrweb", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(SOURCE_ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # A bottom package reaching for Django.
        ("mcp/errors.py", "import django", "mcp uses only"),
        # A lower layer importing a higher one, inside a function.
        ("servers/models.py", "def f():\n    from mrtrweb.calls import access", "layers"),
        # An upward import through a relative name.
        ("people/roles.py", "from .. import inbox", "layers"),
        # Beside the allowed parts of calls.
        ("webhooks/sending.py", "from mrtrweb.calls import presenting", "Webhooks import only"),
        # Down the layers, but into another app's views.
        ("policies/resolve.py", "from mrtrweb.servers import views", "another app's views"),
        # Sideways between the independent pages.
        ("inbox/views.py", "from mrtrweb.dashboard import views", "independent"),
        # Inside calls: the engine reaching up to a page, a reader reaching up to the engine.
        ("calls/engine/parking.py", "from ..pages import refresh", "Inside calls"),
        (
            "calls/presenting/history.py",
            "def f():\n    from mrtrweb.calls import engine",
            "Inside calls",
        ),
    ],
)
def test_a_forbidden_import_breaks_a_contract(
    source_copy: Path, module: str, line: str, broken: str
) -> None:
    path = source_copy / "mrtrweb" / module
    original = path.read_text()
    path.write_text(f"{original}\n{line}\n")
    try:
        result = lint_imports(source_copy)
    finally:
        path.write_text(original)
    assert result.returncode == 1, result.stdout + result.stderr
    broken_lines = [row for row in result.stdout.splitlines() if " BROKEN" in row]
    assert any(broken in row for row in broken_lines), result.stdout


def test_an_exception_without_its_import_breaks_the_check(source_copy: Path) -> None:
    """An ``ignore_imports`` line that no longer matches an import fails, so none is kept
    for an import that has gone."""
    path = source_copy / "mrtrweb" / "mcp" / "io_loop.py"
    original = path.read_text()
    path.write_text(re.sub(r"^(from asgiref|import asgiref).*$", "", original, flags=re.M))
    try:
        result = lint_imports(source_copy)
    finally:
        path.write_text(original)
    assert result.returncode != 0
    assert "mrtrweb.mcp.io_loop -> asgiref" in result.stdout + result.stderr


def test_a_new_package_needs_its_layer(source_copy: Path) -> None:
    package = source_copy / "mrtrweb" / "newcomer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    try:
        result = lint_imports(source_copy)
    finally:
        shutil.rmtree(package)
    assert result.returncode != 0
    assert "mrtrweb.newcomer" in result.stdout + result.stderr


def _dependency_roots() -> set[str]:
    """The top-level import names of the project's runtime dependencies."""
    names = {
        re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", spec).group()).lower()
        for spec in pyproject()["project"]["dependencies"]
    }
    return {
        root
        for root, distributions in packages_distributions().items()
        if any(re.sub(r"[-_.]+", "-", name).lower() in names for name in distributions)
    }


def test_the_third_party_contracts_forbid_every_other_dependency() -> None:
    """A dependency added to the project is forbidden to the bottom packages until their
    contract allows it, as the allow-lists they stand for would have it."""
    contracts = {
        contract["id"]: contract
        for contract in pyproject()["tool"]["importlinter"]["contracts"]
        if contract["id"].startswith("third-party-")
    }
    assert set(contracts) == set(THIRD_PARTY_ALLOWED)
    roots = _dependency_roots()
    assert {"django", "httpx", "pydantic"} <= roots
    for contract_id, allowed in THIRD_PARTY_ALLOWED.items():
        forbidden = set(contracts[contract_id]["forbidden_modules"])
        assert not forbidden & allowed, contract_id
        missing = sorted(roots - allowed - forbidden)
        assert not missing, f"{contract_id}: forbid {missing} or allow them"


# -- what the contracts cannot say ------------------------------------------------------------

# A form library, not a web layer: elicitation builds forms and cleans values.
ELICITATION_NOT_DJANGO = (
    "django.db",
    "django.contrib",
    "django.views",
    "django.http",
    "django.urls",
)


def _absolute_imports(path: Path) -> list[tuple[int, str]]:
    """Every absolutely imported name of a module, ``from a import b`` as ``a.b``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def test_elicitation_uses_no_models_views_or_urls_of_django() -> None:
    problems = [
        f"{path.relative_to(SOURCE_ROOT)}:{lineno}: {name}"
        for path in sorted((PACKAGE_ROOT / "elicitation").rglob("*.py"))
        for lineno, name in _absolute_imports(path)
        if any(name == part or name.startswith(part + ".") for part in ELICITATION_NOT_DJANGO)
    ]
    assert not problems, "\n".join(problems)


def test_the_elicitation_check_sees_every_form_of_import(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_text(
        "import django.db\nfrom django import urls\ndef f():\n    from django.http import A\n"
    )
    assert _absolute_imports(path) == [
        (1, "django.db"),
        (2, "django.urls"),
        (4, "django.http.A"),
    ]


@pytest.mark.parametrize("package", ["mrtrweb.mcp", "mrtrweb.oauth", "mrtrweb.netguard"])
def test_importing_every_protocol_module_loads_no_django(package: str) -> None:
    # The contracts see our own statements; this catches a dependency that drags Django in.
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
