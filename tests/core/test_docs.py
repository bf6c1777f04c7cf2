"""The docs stay readable in one sitting, and the architecture names every package.

Detail belongs in the module docstrings, so a doc line is at most a short paragraph long;
the performance doc says how to run the benchmarks and what the last run showed, not its
history (that is in git).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import mrtrweb

PACKAGE_ROOT = Path(mrtrweb.__file__).resolve().parent
DOCS = PACKAGE_ROOT.parent / "docs"
LONGEST_LINE = 300
PERFORMANCE_LINES = 400


def _top_level_names() -> list[str]:
    """``mrtrweb/<package>/`` and ``mrtrweb/<module>.py``, as the architecture names them."""
    names = []
    for path in sorted(PACKAGE_ROOT.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            names.append(f"mrtrweb/{path.name}/")
        elif path.suffix == ".py" and path.stem != "__init__":
            names.append(f"mrtrweb/{path.name}")
    return names


def test_the_architecture_describes_every_package() -> None:
    text = (DOCS / "architecture.md").read_text()
    missing = [name for name in _top_level_names() if f"`{name}`" not in text]
    assert not missing, f"give each a line in docs/architecture.md: {missing}"


@pytest.mark.parametrize("doc", sorted(DOCS.glob("*.md")), ids=lambda path: path.name)
def test_no_doc_line_is_a_wall_of_text(doc: Path) -> None:
    long = [
        f"{doc.name}:{number}: {len(line)} characters"
        for number, line in enumerate(doc.read_text().splitlines(), start=1)
        if len(line) > LONGEST_LINE
    ]
    assert not long, "\n".join(long)


def test_the_performance_doc_is_short() -> None:
    lines = (DOCS / "performance.md").read_text().count("\n")
    assert lines <= PERFORMANCE_LINES, f"docs/performance.md has {lines} lines"
