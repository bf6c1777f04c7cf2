"""A call's audit trail as people read it: one entry per recorded transition.

The events are the engine's own records (``calls.Event``), shown as they are: who, when,
what was asked (keys and messages: for a parked round, from the round's own inputRequests),
what was answered (action and content), how each
resubmission came out, and the SHA-256 of each requestState. The state itself is never
recorded by the engine and never read here; a detail key naming it is dropped all the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext_lazy
from django.utils.translation import gettext_lazy as _

from mrtrweb.calls.engine import digests
from mrtrweb.calls.models import Event, Round
from mrtrweb.calls.presenting.server_content import answer_value, pretty_json

TITLES = {
    "started": "Call started",
    "round_parked": "Round parked: the server asks",
    "state_only_retry": "State-only round: resubmitted at once",
    "answered": "Answered",
    # A quorum round (engine.quorum): the first answers, then each approval or rejection.
    "quorum_proposed": gettext_lazy("Proposed: waiting for approvals"),
    "quorum_vote": gettext_lazy("Voted on the proposal"),
    "delivered": "Resubmitted: the server accepted the answers",
    "delivery_failed": "Resubmission failed",
    "delivery_retried": "Delivery retried",
    "delivery_retry_scheduled": "Not delivered: retry scheduled",
    "outcome_unknown": "Sent, outcome unknown",
    "resent": "Resent by an admin",
    "late_answer_ignored": "Late answer to an older attempt: ignored",
    "completed": "Completed",
    "failed": "Failed",
    "expired": "Expired",
    "claimed": "Claimed",
    "released": "Claim released",
    "reassigned": "Reassigned",
    "reminded": gettext_lazy("Reminder sent"),
    "escalated": gettext_lazy("Escalated: not answered in time, passed to the fallback"),
    "abandoned": "Abandoned",
    # Split rounds.
    "round_split": gettext_lazy("Round split between people"),
    "part_answered": gettext_lazy("Part answered"),
    "split_declined": gettext_lazy("A part declined the whole round"),
    # The renewal policy (calls/engine/renewal_replay.py).
    "renewed": _("Renewed: the call ran again up to this round, which now waits on a fresh state"),
    "renewal_changed": _("Renewal found other questions: asked again as a new round"),
    "renewal_completed": _("Renewal: the call ran again and completed without asking"),
    "renewal_failed": _("Renewal failed"),
}
# Detail keys shown in their own columns; anything else is listed as it is.
SHOWN = {
    "answers",
    "request_state_sha256",
    "assigned_user",
    "assigned_group",
    "reason",
    "server_message",
    "is_error",
    "http_status",
    "index",
    "for_user",
}


@dataclass(frozen=True)
class Asked:
    key: str
    method: str
    mode: str
    message: str


@dataclass(frozen=True)
class Answered:
    key: str
    action: str
    content: tuple[tuple[str, str], ...]


@dataclass
class EventView:
    pk: int
    kind: str
    title: str
    created_at: Any
    actor: str
    round_index: int | None
    asked: list[Asked] = field(default_factory=list)
    answered: list[Answered] = field(default_factory=list)
    outcome: str = ""
    outcome_ok: bool | None = None
    request_state_sha256: str = ""
    assigned: str = ""
    # Whom the actor answered for, as their delegate ("answered by bob for ada").
    for_user: str = ""
    other: list[tuple[str, str]] = field(default_factory=list)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _asked(requests: Any) -> list[Asked]:
    if requests is None:
        return []
    return [
        Asked(
            key=_text(item.get("key")),
            method=_text(item.get("method")),
            mode=_text(item.get("mode")),
            message=_text(item.get("message")),
        )
        for item in Round.questions_of(requests)
        if isinstance(item, Mapping)
    ]


def _answered(detail: Mapping[str, Any]) -> list[Answered]:
    answers = detail.get("answers")
    if not isinstance(answers, Mapping):
        return []
    result = []
    for key, answer in answers.items():
        answer = answer if isinstance(answer, Mapping) else {}
        content = answer.get("content")
        items = (
            tuple((str(name), answer_value(value)) for name, value in content.items())
            if isinstance(content, Mapping)
            else ()
        )
        result.append(Answered(key=str(key), action=_text(answer.get("action")), content=items))
    return result


def _outcome(kind: str, detail: Mapping[str, Any], actor: str) -> tuple[str, bool | None]:
    status = detail.get("http_status")
    http = f"HTTP {status}: " if isinstance(status, int) else ""
    if kind == "delivered":
        return f"{http}accepted; what it answered follows", True
    if kind == "delivery_failed":
        return f"{http}{_text(detail.get('reason')) or 'not delivered'}", False
    if kind == "delivery_retry_scheduled":
        return f"{http}{_text(detail.get('reason')) or 'not delivered'}; will retry", False
    if kind == "outcome_unknown":
        then = (
            "resent once automatically (the tool is idempotent)"
            if detail.get("resent_automatically")
            else "flagged for an admin"
        )
        return f"{http}{_text(detail.get('reason')) or 'no usable answer'}; {then}", False
    if kind == "expired":
        message = _text(detail.get("server_message"))
        if message:
            return f"{http}the server rejected the requestState: {message}", False
        return (f"expired by {actor}" if actor else "expired"), False
    if kind == "completed":
        if detail.get("is_error"):
            return "the tool reported an error", False
        return "result received", True
    if kind == "failed":
        return _text(detail.get("reason")) or "failed", False
    return "", None


def _assigned(detail: Mapping[str, Any]) -> str:
    if detail.get("assigned_user"):
        return f"user {detail['assigned_user']}"
    if detail.get("assigned_group"):
        return f"group {detail['assigned_group']}"
    return ""


def _is_state(name: str) -> bool:
    flat = name.lower().replace("_", "").replace("-", "")
    return "requeststate" in flat and not flat.endswith("sha256")


def _parked_requests(events: list[Event]) -> dict[int | None, Any]:
    """The inputRequests of the rounds parked by these events (the round row holds what was
    asked; the event does not copy it), in one query."""
    ids = {
        event.round_id
        for event in events
        if event.kind == "round_parked" and event.round_id is not None
    }
    if not ids:
        return {}
    return dict(Round.objects.filter(pk__in=ids).values_list("pk", "input_requests"))


def event_views(events: Iterable[Event]) -> list[EventView]:
    events = list(events)
    parked_requests = _parked_requests(events)
    views = []
    for event in events:
        detail = event.detail if isinstance(event.detail, Mapping) else {}
        actor = event.actor.get_username() if event.actor is not None else ""
        outcome, ok = _outcome(event.kind, detail, actor)
        other = [
            (name, value if isinstance(value, str) else pretty_json(value))
            for name, value in detail.items()
            if name not in SHOWN and not _is_state(name) and value not in (None, "", [], {})
        ]
        views.append(
            EventView(
                pk=event.pk,
                kind=event.kind,
                title=str(TITLES.get(event.kind, event.kind.replace("_", " ").capitalize())),
                created_at=event.created_at,
                actor=actor,
                round_index=getattr(event, "round_index", None),
                asked=_asked(
                    parked_requests.get(event.round_id) if event.kind == "round_parked" else None
                ),
                answered=_answered(detail),
                outcome=outcome,
                outcome_ok=ok,
                request_state_sha256=digests.shown(detail.get(digests.DIGEST)),
                assigned=_assigned(detail),
                for_user=_text(detail.get("for_user")),
                other=other,
            )
        )
    return views


@dataclass(frozen=True)
class RoundDigest:
    index: int
    status: str
    status_label: str
    has_request_state: bool
    request_state_sha256: str
    assigned: str
    claimed_by: str
    answered_by: str


def _state_digests(rounds: list[Round]) -> dict[int, str]:
    """Each round's requestState SHA-256 as its round_parked event recorded it (the round row
    does not keep it), in one query, without reading a state."""
    found = (
        Event.objects.filter(round__in=[round.pk for round in rounds], kind="round_parked")
        .order_by("id")
        .values_list("round_id", "detail")
    )
    return {
        round_id: digests.shown(detail.get(digests.DIGEST))
        for round_id, detail in found
        if isinstance(detail, Mapping)
    }


def round_digests(rounds: Iterable[Round]) -> list[RoundDigest]:
    rounds = list(rounds)
    state_digests = _state_digests(rounds) if rounds else {}
    digests = []
    for round in rounds:
        if round.assigned_user is not None:
            assigned = f"user {round.assigned_user.get_username()}"
        elif round.assigned_group is not None:
            assigned = f"group {round.assigned_group.name}"
        else:
            assigned = ""
        digests.append(
            RoundDigest(
                index=round.index,
                status=round.status,
                status_label=round.get_status_display(),
                has_request_state=round.has_request_state,
                request_state_sha256=state_digests.get(round.pk, "")
                if round.has_request_state
                else "",
                assigned=assigned,
                claimed_by=round.claimed_by.get_username() if round.claimed_by else "",
                answered_by=round.answered_by.get_username() if round.answered_by else "",
            )
        )
    return digests
