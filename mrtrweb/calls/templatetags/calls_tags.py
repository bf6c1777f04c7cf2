"""Template helpers for the calls pages. Every server string stays escaped by the template."""

from __future__ import annotations

from typing import Any

from django import template

from mrtrweb.calls.rendering import Block, pretty_json

register = template.Library()


@register.inclusion_tag("calls/_block.html")
def content_block(block: Block) -> dict[str, Any]:
    return {"block": block}


@register.filter(name="pretty_json")
def pretty_json_filter(value: Any) -> str:
    return pretty_json(value)
