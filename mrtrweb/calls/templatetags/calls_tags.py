"""Template helpers for the calls pages. Every server string stays escaped by the template."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import template
from django.contrib.auth.models import User
from django.utils.html import format_html
from django.utils.safestring import SafeString

from mrtrweb.calls.presenting.outcome_badges import Outcome
from mrtrweb.calls.presenting.rounds import changes_said, person_name, renewal_state
from mrtrweb.calls.presenting.server_content import Block, pretty_json
from mrtrweb.people.when import moment

register = template.Library()

STYLES = ("both", "relative", "date")


@register.inclusion_tag("calls/_block.html")
def content_block(block: Block) -> dict[str, Any]:
    return {"block": block}


@register.filter(name="pretty_json")
def pretty_json_filter(value: Any) -> str:
    return pretty_json(value)


@register.simple_tag(takes_context=True)
def when(context: Any, at: dt.datetime | None, style: str = "both") -> SafeString | str:
    """``<time>`` saying ``at`` in the reader's zone: "in 8 minutes — 2 Dec, 07:29" (both),
    "5 minutes ago" (relative) or "2 Dec, 07:29" (date); the full date and zone as its title.

    When the zone is only the default (no account setting, no browser zone known), the text
    says so ("UTC"), so nobody takes it for their own.
    """
    if at is None:
        return ""
    if style not in STYLES:
        raise template.TemplateSyntaxError(f"when: style must be one of {STYLES}")
    shown = moment(at)
    # Only the way the page says it is worked out (each is a formatting of its own): the
    # styles are the names of a Moment's ways.
    text = getattr(shown, style)
    request = context.get("request")
    if style != "relative" and getattr(request, "time_zone_source", "") == "default":
        text += f" {shown.zone}"
    return format_html('<time datetime="{}" title="{}">{}</time>', at.isoformat(), shown.full, text)


@register.filter
def who(user: User) -> str:
    """A person as others read them: their full name, else their username."""
    return person_name(user)


@register.filter
def outcome_of(outcomes: dict[int, Outcome], call: Any) -> Outcome | None:
    """``outcomes|outcome_of:call``: the call's outcome from a list's ``outcomes_for``."""
    return outcomes.get(call.pk) if isinstance(outcomes, dict) else None


@register.inclusion_tag("calls/_outcome.html")
def outcome_badge(outcome: Outcome | None) -> dict[str, Any]:
    return {"outcome": outcome}


@register.filter(name="renewal_state")
def renewal_state_filter(round: Any) -> Any:
    """``{% with note=round|renewal_state %}``: the renewal policy's note on a round."""
    return renewal_state(round)


@register.filter(name="changes_said")
def changes_said_filter(changes: Any) -> list[str]:
    return changes_said(changes)
