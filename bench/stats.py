"""A figure: the median of repeated measurements with its spread."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (``q`` in 0..1) of a non-empty sequence."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (position - low))


def summary(values: Sequence[float], unit: str) -> dict[str, Any]:
    """median, p25/p75 (the IQR), p95, min, max and n; ``None`` figures when nothing was
    measured, so the JSON keeps its shape."""
    if not values:
        return {
            "unit": unit,
            "n": 0,
            "median": None,
            "p25": None,
            "p75": None,
            "p95": None,
            "min": None,
            "max": None,
        }
    return {
        "unit": unit,
        "n": len(values),
        "median": statistics.median(values),
        "p25": quantile(values, 0.25),
        "p75": quantile(values, 0.75),
        "p95": quantile(values, 0.95),
        "min": float(min(values)),
        "max": float(max(values)),
    }


def ratio(numerator: dict[str, Any], denominator: dict[str, Any]) -> float | None:
    a, b = numerator.get("median"), denominator.get("median")
    if a is None or not b:
        return None
    return a / b
