"""Calls and rounds as rows, for tests whose subject is what is stored (access rules, pages,
listings, storage), not how a call gets there: a test of the engine starts its calls on a real
peer instead, through the pages, the API or the engine itself.

Each factory makes a valid row with defaults that need nothing else; pass what the test is
about and leave the rest:

- ``CallFactory(started_by=ada)``: a running ``tools/call`` of ``echo``, on a connection of its
  own to an address nothing answers on (``ConnectionFactory``), started by a new person unless
  given (``UserFactory``);
- ``RoundFactory(call=call, assigned_user=bob)``: a pending round with no questions, numbered
  after the call's last round (``index`` may be given), of a new call unless given.

``.build()`` makes an unsaved row; ``create_batch(n, ...)`` makes ``n``.
"""

from __future__ import annotations

from typing import Any

import factory
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db.models import Max
from django.utils import timezone
from factory.django import DjangoModelFactory

from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.models import Connection


class UserFactory(DjangoModelFactory):
    """A person with no role and the password ``pw-<username>-123``, as
    ``tests.support.factories.make_user`` makes them (use that for one with roles)."""

    class Meta:
        model = settings.AUTH_USER_MODEL
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"person{n}")
    password = factory.LazyAttribute(lambda person: make_password(f"pw-{person.username}-123"))


class ConnectionFactory(DjangoModelFactory):
    """A connection tested by an operator (so start pages offer it) to a closed port: pass
    ``url=peer.url`` for one that answers (or use ``make_connection(peer)``)."""

    class Meta:
        model = Connection

    name = factory.Sequence(lambda n: f"server{n}")
    title = factory.LazyAttribute(lambda conn: f"{conn.name} server")
    url = factory.LazyAttribute(lambda conn: f"http://127.0.0.1:9/{conn.name}/mcp")
    tested_at = factory.LazyFunction(timezone.now)


class CallFactory(DjangoModelFactory):
    class Meta:
        model = Call

    connection = factory.SubFactory(ConnectionFactory)
    method = Call.Method.TOOL
    target = "echo"
    started_by = factory.SubFactory(UserFactory)


def _next_index(round: Any) -> int:
    last = round.call.rounds.aggregate(last=Max("index"))["last"]
    return (last or 0) + 1


class RoundFactory(DjangoModelFactory):
    class Meta:
        model = Round

    call = factory.SubFactory(CallFactory)
    index = factory.LazyAttribute(_next_index)
