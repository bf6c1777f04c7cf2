"""Counts kept by the fuzz tests and printed at the end of the run (``conftest.py``).

A test counts every outcome as it sees it, errors included: an error is counted before it is
raised, so the summary line of a failing run says how many examples went wrong.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis.errors import HypothesisException

# One Counter per fuzz subject ("input requests", "round posts", ...), in the order declared.
COUNTS: dict[str, Counter[str]] = {}
# Per subject: the outcomes that add up to its total, then others shown after them.
PARTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def declare(subject: str, outcomes: tuple[str, ...], extra: tuple[str, ...] = ()) -> None:
    """``outcomes`` (each example has exactly one) add up to the total; ``extra`` are counted
    besides; "errors" is always shown."""
    PARTS[subject] = (outcomes, (*extra, "errors"))
    COUNTS.setdefault(subject, Counter())


def count(subject: str, outcome: str, n: int = 1) -> None:
    COUNTS.setdefault(subject, Counter())[outcome] += n


@contextmanager
def counting_errors(subject: str) -> Iterator[None]:
    try:
        yield
    except HypothesisException:
        raise  # hypothesis steering its own search, not a failure
    except Exception:
        count(subject, "errors")
        raise


def lines() -> list[str]:
    out = []
    for subject, counter in COUNTS.items():
        outcomes, extra = PARTS.get(subject, (tuple(counter), ("errors",)))
        total = sum(counter[k] for k in outcomes) + counter["errors"]
        shown = [*outcomes, *[k for k in counter if k not in outcomes and k not in extra], *extra]
        parts = ", ".join(f"{counter[k]} {k}" for k in shown)
        out.append(f"fuzz: {total} {subject}: {parts}")
    return out
