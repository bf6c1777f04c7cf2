"""People, groups, connections and parked rounds for the inbox and access-matrix tests.

Rounds come from the real fastmcp peer (``approve_deploy``) through the engine, so routing,
requestState and the stored requests are exactly what production parks. Tests that need many
rows copy one real round instead of asking the server again (:func:`copies_of`).
"""

from __future__ import annotations

import re
from html import unescape
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.http import QueryDict
from django.test import Client

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.elicitation import prefix_for_key
from mrtrweb.people.roles import ADMINS, END_USERS, OPERATORS, ensure_roles
from mrtrweb.servers.models import Connection, Routing, ToolExposure
from tests.elicitation.support import post
from tests.support.factories import make_connection as connection

APPROVERS = "Approvers"
# approve_deploy's `approval` form as a browser posts it (window "tonight", notify "ops").
APPROVAL = {"approve": "on", "replicas": "3", "window": "1", "notify": ["0"]}


def group(name: str) -> Group:
    ensure_roles()
    return Group.objects.get_or_create(name=name)[0]


def person(name: str, *groups: str, email: bool = True, active: bool = True) -> Any:
    user = get_user_model().objects.create_user(
        name,
        email=f"{name}@example.test" if email else "",
        password=f"pw-{name}-123",
        is_active=active,
    )
    user.groups.add(group(END_USERS), *(group(g) for g in groups))
    return user


def admin(name: str = "alice") -> Any:
    return person(name, ADMINS)


def operator(name: str = "otto") -> Any:
    return person(name, OPERATORS)


def browser(user: Any | None = None, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user)
    return client


def expose(conn: Connection, *tools: str) -> Connection:
    """Let end users start ``tools`` on ``conn`` (an operator's exposure)."""
    for tool in tools:
        ToolExposure.objects.update_or_create(
            connection=conn, tool_name=tool, defaults={"exposed": True}
        )
    return conn


def to_user(peer: Any, user: Any, name: str = "to-user") -> Connection:
    return connection(peer, name, routing=Routing.USER, route_user=user)


def to_group(peer: Any, group_name: str = APPROVERS, name: str = "to-group") -> Connection:
    return connection(peer, name, routing=Routing.GROUP, route_group=group(group_name))


def ask(conn: Connection, caller: Any, tool: str = "approve_deploy", **arguments: Any) -> Round:
    """Start ``tool`` on the real peer behind ``conn``; its first parked round."""
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target=tool,
        arguments=arguments or {"service": "api"},
        user=caller,
    )
    assert call.status == Call.Status.WAITING, call.error
    return call.rounds.get()


def copies_of(round: Round, count: int, **changes: Any) -> list[Round]:
    """``count`` more pending rounds like ``round``, each on a call of its own."""
    made = []
    for _ in range(count):
        call = Call.objects.get(pk=round.call_id)
        call.pk = None
        call.save()
        copy = Round.objects.get(pk=round.pk)
        copy.pk, copy.call = None, call
        for name, value in changes.items():
            setattr(copy, name, value)
        copy.save()
        made.append(copy)
    return made


def answer_data(answers: dict[str, Any] | None = None, action: str = "accept") -> dict[str, Any]:
    data: QueryDict = post(prefix_for_key("approval"), answers if answers is not None else APPROVAL)
    return {**{k: data.getlist(k) for k in data}, "action": action}


def state() -> dict[str, Any]:
    """Everything an action could change, to prove a refused request changed nothing."""
    return {
        "calls": list(Call.objects.order_by("pk").values("pk", "status", "error", "finished_at")),
        "rounds": list(
            Round.objects.order_by("pk").values(
                "pk",
                "status",
                "answers",
                "answered_by",
                "assigned_user",
                "assigned_group",
                "claimed_by",
                "claimed_at",
                "delivery_error",
            )
        ),
        "events": Event.objects.count(),
    }


def text(response: Any) -> str:
    return response.content.decode()


def visible_text(response: Any) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", text(response), flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())


def round_links(response: Any) -> set[int]:
    """The rounds a page links to."""
    return {int(pk) for pk in re.findall(r'href="/rounds/(\d+)/"', text(response))}


def call_links(response: Any) -> set[int]:
    return {int(pk) for pk in re.findall(r'href="/calls/(\d+)/"', text(response))}
