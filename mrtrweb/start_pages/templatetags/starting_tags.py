"""Template helpers for the start pages. Every server string stays escaped by the template."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import template

register = template.Library()


@register.simple_tag
def pick_url(base: str, kind: str, value: Any) -> str:
    """``base?kind=value`` with the value (a server string) query-encoded."""
    return f"{base}?{urlencode({kind: value})}"
