"""Seeding calls and rounds straight into the database, for the dashboard's listing tests.

These rounds never met a server: the listing tests are database tests (filters, search, sort,
paging, query counts). The action and audit tests use real peers instead.
"""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from itertools import count
from typing import Any

from django.test import Client
from django.utils import timezone

from mrtrweb.calls.models import Call, Round
from mrtrweb.people.roles import ADMINS, END_USERS, OPERATORS
from mrtrweb.servers.models import Connection
from tests.factories import CallFactory, RoundFactory
from tests.support import factories
from tests.support.factories import make_connection  # noqa: F401 (the dashboard tests import it from here)

_serial = count(1)


def make_user(username: str, *groups: str, **fields: Any) -> Any:
    """A person with an email address (tests/support/factories.py makes them)."""
    return factories.make_user(username, *groups, email=f"{username}@example.test", **fields)


def make_admin(username: str = "root") -> Any:
    return make_user(username, ADMINS)


def make_end_user(username: str = "eve") -> Any:
    return make_user(username, END_USERS)


def make_operator(username: str = "olga") -> Any:
    return make_user(username, OPERATORS)


def client_for(user: Any, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def form_request(message: str, field: str = "ok") -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": "boolean"}},
                "required": [field],
            },
        },
    }


def make_round(
    *,
    connection: Connection,
    starter: Any,
    tool: str = "approve_deploy",
    message: str = "Deploy api to production?",
    key: str = "approval",
    status: str = Round.Status.PENDING,
    age: timedelta = timedelta(minutes=1),
    deadline: timedelta = timedelta(minutes=10),
    assigned_user: Any = None,
    assigned_group: Any = None,
    claimed_by: Any = None,
    request_state: str | None = None,
    call: Call | None = None,
) -> Round:
    created = timezone.now() - age
    if call is None:
        call = CallFactory(
            connection=connection,
            target=tool,
            started_by=starter,
            status=Call.Status.WAITING if status == Round.Status.PENDING else Call.Status.COMPLETED,
            created_at=created,
        )
    round = RoundFactory.build(
        call=call,
        input_requests={key: form_request(message)},
        summary=message,
        status=status,
        assigned_user=assigned_user if assigned_group is None else None,
        assigned_group=assigned_group,
        claimed_by=claimed_by,
        created_at=created,
        expires_at=created + deadline,
    )
    if assigned_user is None and assigned_group is None:
        round.assigned_user = starter
    round.set_request_state(request_state)
    round.save()
    return round


def seed_rounds(n: int, *, connection: Connection, starter: Any, **fields: Any) -> list[Round]:
    """``n`` rounds on ``n`` calls, created one minute apart (the first is the oldest)."""
    rounds = []
    for i in range(n):
        rounds.append(
            make_round(
                connection=connection,
                starter=starter,
                age=timedelta(minutes=n - i),
                message=f"Question {next(_serial)}",
                **fields,
            )
        )
    return rounds


def text(response: Any) -> str:
    return response.content.decode()


def row_ids(response: Any, kind: str = "round") -> list[int]:
    """The ids of the rows a list page shows, in order."""
    return [
        int(x) for x in re.findall(rf'<tr class="state-[a-z]+" id="{kind}-(\d+)"', text(response))
    ]


def visible_text(response: Any) -> str:
    body = re.sub(r"<script.*?</script>", " ", text(response), flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body)))
