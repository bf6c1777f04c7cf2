"""Links that keep a list's filters (another page, another sort), and the flagged count."""

from __future__ import annotations

from typing import Any

from django import template
from django.http import QueryDict

from mrtrweb.calls.models import Round

register = template.Library()


def _with(query: QueryDict, changes: dict[str, Any]) -> str:
    updated = query.copy()
    for name, value in changes.items():
        if value in (None, ""):
            updated.pop(name, None)
        else:
            updated[name] = str(value)
    return updated.urlencode()


@register.simple_tag
def url_with(base: str, query: QueryDict, **changes: Any) -> str:
    """``base`` with ``query``, some parameters replaced (an empty value drops one)."""
    encoded = _with(query, changes)
    return f"{base}?{encoded}" if encoded else base


@register.simple_tag
def sort_url(base: str, query: QueryDict, current: str, column: str, first: dict[str, str]) -> str:
    """Sort by ``column``: the other direction if it is the current sort, else its first."""
    if current == column:
        wanted = f"-{column}"
    elif current == f"-{column}":
        wanted = column
    else:
        wanted = first.get(column, column)
    return url_with(base, query, sort=wanted, page=None)


@register.simple_tag
def sort_state(current: str, column: str) -> str:
    """The ``aria-sort`` value of a column header."""
    if current == column:
        return "ascending"
    if current == f"-{column}":
        return "descending"
    return "none"


@register.simple_tag
def flagged_rounds() -> int:
    """How many rounds wait for an admin because their delivery's outcome is unknown."""
    return Round.objects.filter(status=Round.Status.UNKNOWN).count()
