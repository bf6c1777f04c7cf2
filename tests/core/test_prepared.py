"""Lookups compiled once (mrtrweb/db/prepared.py): the statement Django would send, the rows
it would give (every field converted back, encrypted tokens decrypted), for any values; and
refused, never answered wrongly, where the SQL would depend on the values."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mrtrweb.authorizations.models import Authorization
from mrtrweb.calls.models import Round
from mrtrweb.db.prepared import Prepared
from mrtrweb.servers.models import Connection, ToolExposure
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db


def _authorizations(connection_id: int, user_id: int) -> Any:
    return Authorization.objects.filter(connection_id=connection_id, user_id=user_id)


def test_rows_are_the_querysets_with_every_field_converted() -> None:
    server = Connection.objects.create(name="one", url="http://127.0.0.1:9/mcp")
    ada, bob = make_user("ada"), make_user("bob")
    Authorization.objects.create(
        connection=server,
        user=ada,
        kind=Authorization.Kind.PERSON,
        access_token="secret-access",
        refresh_token="secret-refresh",
        scopes="read write",
    )
    prepared = Prepared(_authorizations, int, int)
    for user in (ada, bob):
        with CaptureQueriesContext(connection) as orm:
            expected = _authorizations(server.pk, user.pk).first()
        with CaptureQueriesContext(connection) as ours:
            got = prepared.first(server.pk, user.pk)
        # The same statement, the values in their places.
        assert [q["sql"] for q in ours] == [q["sql"] for q in orm]
        if expected is None:
            assert got is None
            continue
        assert got is not None and got.pk == expected.pk
        for field in Authorization._meta.concrete_fields:
            assert getattr(got, field.attname) == getattr(expected, field.attname), field.name
        assert got.access_token == "secret-access"  # decrypted, as the ORM's row


def test_a_value_used_twice_and_constants_keep_their_places() -> None:
    server = Connection.objects.create(name="one", url="http://127.0.0.1:9/mcp")
    ToolExposure.objects.create(connection=server, tool_name="confirm", exposed=True)
    ToolExposure.objects.create(connection=server, tool_name="hidden", exposed=False)
    exposed = Prepared(
        lambda pk, name: ToolExposure.objects.filter(
            connection_id=pk, tool_name=name, exposed=True
        ),
        int,
        str,
    )
    assert exposed.exists(server.pk, "confirm")
    assert not exposed.exists(server.pk, "hidden")  # the constant is still there
    assert not exposed.exists(server.pk + 1, "confirm")
    # The same value in two places of one statement: a stand-in left in either would find
    # nothing.
    between = Prepared(
        lambda name: ToolExposure.objects.filter(tool_name__gte=name, tool_name__lte=name), str
    )
    assert [row.tool_name for row in between.all("confirm")] == ["confirm"]
    assert Round.Status.PENDING == "pending"
    statuses = Prepared(lambda status: Round.objects.filter(status=status), str)
    assert not statuses.exists(Round.Status.PENDING)  # a choice is sent as its value


def test_what_would_change_the_sql_is_refused() -> None:
    prepared = Prepared(_authorizations, int, int)
    for values in ((1, None), (1, [1, 2]), (1, True), (1,), ("1", 1)):
        with pytest.raises(TypeError):
            prepared.first(*values)
    with pytest.raises(ValueError, match="related"):
        Prepared(lambda pk: Round.objects.select_related("call").filter(pk=pk), int).all(1)
    with pytest.raises(ValueError, match="not a parameter"):
        Prepared(lambda pk: Round.objects.all(), int).all(1)
    with pytest.raises(TypeError, match="int or str"):
        Prepared(lambda at: Round.objects.filter(created_at=at), float).all(1.0)


def test_compiled_once_a_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of it: after the first run, Django compiles nothing."""
    from django.db.models.sql.compiler import SQLCompiler

    compiled = []
    as_sql = SQLCompiler.as_sql

    def counting(self: SQLCompiler, *args: Any, **kwargs: Any) -> Any:
        compiled.append(self.query.model)
        return as_sql(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counting)
    server = Connection.objects.create(name="one", url="http://127.0.0.1:9/mcp")
    prepared = Prepared(_authorizations, int, int)
    assert prepared.first(server.pk, 1) is None
    assert compiled == [Authorization]
    for user_id in range(2, 6):
        assert prepared.first(server.pk, user_id) is None
    assert compiled == [Authorization]
    # The ORM itself compiles every time.
    _authorizations(server.pk, 2).first()
    assert compiled == [Authorization, Authorization]
