"""Rounds parked without a server, for the fuzz tests of the round page and the API.

``tests.dashboard.support.make_round`` stores a pending round (its call, routing and
deadline) and its questions are then set to one of ``ROUNDS``. Nothing delivers an answer:
in-process tests run with ``MRTRWEB_DELIVER_ON_ANSWER`` off, so an accepted answer is stored
with its delivery task (a database row no worker runs here) and goes no further.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from django_tasks_db.models import DBTaskResult

from mrtrweb.calls.models import Event, Round
from mrtrweb.calls.presenting.rounds import RoundAnswers, Section
from tests.dashboard.support import make_round
from tests.fuzz.strategies import PAYLOADS


def _form(message: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": properties, "required": required},
        },
    }


EVERY_KIND = _form(
    f"Deploy? {PAYLOADS[0]}",
    {
        "name": {"type": "string", "title": PAYLOADS[3], "minLength": 2, "maxLength": 40},
        "notes": {"type": "string", "maxLength": 2000, "description": PAYLOADS[4]},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "day": {"type": "string", "format": "date"},
        "when": {"type": "string", "format": "date-time"},
        "ratio": {"type": "number", "minimum": -1.5, "maximum": 1e308},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3},
        "approve": {"type": "boolean", "title": "Approve"},
        "window": {"type": "string", "enum": ["now", "tonight", PAYLOADS[5]]},
        "region": {
            "type": "string",
            "oneOf": [
                {"const": f"r{i}", "title": f"Region {i} {PAYLOADS[i % 4]}"} for i in range(8)
            ],
        },
        "notify": {
            "type": "array",
            "items": {"anyOf": [{"const": c, "title": c.upper()} for c in ("ops", "dev", "qa")]},
            "minItems": 1,
            "maxItems": 2,
        },
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b", "c", "d", "e", "f"]},
        },
    },
    ["name", "approve", "window", "notify"],
)
SMALL = _form("Sure?", {"ok": {"type": "boolean"}}, ["ok"])
LINK = {
    "method": "elicitation/create",
    "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/login"},
}
NESTED = _form("Nested", {"inner": {"type": "object", "properties": {}}}, [])
UNDECLARED = {"method": "sampling/createMessage", "params": {"messages": []}}

# The rounds a post may go to: every kind of field; two questions; a link to agree to first;
# a question we cannot show (Decline/Cancel only); a request we never declared (Abandon only).
ROUNDS = {
    "every kind": {"deploy": EVERY_KIND},
    "two questions": {"deploy": EVERY_KIND, f"sure {PAYLOADS[1]}": SMALL},
    "link": {"link": LINK, "sure": SMALL},
    "cannot show": {"nested": NESTED, "sure": SMALL},
    "undeclared": {"sample": UNDECLARED},
}


@dataclass
class Pool:
    """One pending round per kind; one that gets answered is replaced by a fresh one."""

    person: Any
    connection: Any
    rounds: dict[str, Round] = field(default_factory=dict)
    answered: list[int] = field(default_factory=list)

    def round(self, kind: str) -> Round:
        if kind not in self.rounds:
            round = make_round(connection=self.connection, starter=self.person)
            round.input_requests = ROUNDS[kind]
            round.save(update_fields=["input_requests"])
            self.rounds[kind] = round
        return self.rounds[kind]

    def retire(self, kind: str) -> None:
        self.answered.append(self.rounds.pop(kind).pk)


def answered_events(round: Round) -> int:
    return Event.objects.filter(round=round, kind__in=("answered", "abandoned")).count()


def deliveries(round: Round) -> int:
    """The delivery tasks queued for ``round`` (one per answer, none for an abandoned one)."""
    return DBTaskResult.objects.filter(
        task_path__endswith="deliver_round", args_kwargs__args=[round.pk]
    ).count()


def check_each_answered_once(pool: Pool) -> None:
    """Across a whole run: every round that left pending did so once, with one delivery task
    for an answer and none for an abandoned round; the others are still pending."""
    for round in Round.objects.filter(pk__in=pool.answered):
        assert answered_events(round) == 1, round.pk
        assert deliveries(round) == (1 if round.status == Round.Status.SUBMITTED else 0)
    for round in pool.rounds.values():
        round.refresh_from_db()
        assert round.status == Round.Status.PENDING, round.status
        assert answered_events(round) == 0


@cache
def sections(kind: str) -> tuple[Section, ...]:
    """The sections the round page shows for a round of ``kind`` (unbound forms, to read the
    field specs from). Built once per kind: every round of a kind asks the same questions."""
    return tuple(RoundAnswers(Round(input_requests=ROUNDS[kind])).sections)
