"""Named lookups (mrtrweb/db/prepared.py): the rows the queryset gives (every field converted
back, encrypted tokens decrypted, related rows set), for any values; and a row read by hand
converted as the ORM converts it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from datetime import timezone as timezone_of_offset
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.contrib.sessions.models import Session
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext
from django.utils.timezone import now as django_now

from mrtrweb.authorizations.models import Authorization
from mrtrweb.calls.access import _ROUND_RELATIONS
from mrtrweb.calls.models import Call, Round
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
        assert len(ours) == len(orm) == 1
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
    with pytest.raises(TypeError, match="int, str or datetime"):
        Prepared(lambda at: Round.objects.filter(created_at=at), float).all(1.0)
    at = Prepared(lambda at: Round.objects.filter(created_at__gt=at), datetime)
    with pytest.raises(TypeError, match="no time zone"):
        at.all(datetime(2026, 1, 1))  # the ORM would have made it aware, with a warning
    with pytest.raises(TypeError):
        at.all(date(2026, 1, 1))


def test_what_it_does_not_make_rows_for_is_the_orms(monkeypatch: pytest.MonkeyPatch) -> None:
    """Annotations, extra columns, a value the SQL holds in another form: run by the ORM, each
    time, with the ORM's answer."""
    ada = make_user("ada")
    server = Connection.objects.create(name="one", url="http://127.0.0.1:9/mcp")
    call = _call_with_credentials(server, ada)
    round = Round.objects.create(call=call, index=1)
    day = datetime.combine(round.created_at.date(), datetime.min.time(), tzinfo=UTC)
    lookups = [
        Prepared(lambda pk: Round.objects.filter(pk=pk).annotate(n=Count("pk")), int),
        Prepared(lambda pk: Round.objects.filter(pk=pk).extra(select={"n": "1"}), int),
        Prepared(lambda pk: Round.objects.filter(call_id=call.pk), int),
        Prepared(lambda day: Round.objects.filter(created_at__date=day), datetime),
    ]
    values = [(round.pk,), (round.pk,), (round.pk,), (day,)]
    compiled = _count_compiling(monkeypatch)
    for lookup, args in zip(lookups, values, strict=True):
        for _ in range(2):
            assert lookup.all(*args) == [round]
    assert lookups[0].all(round.pk)[0].n == 1
    assert len(compiled) >= 8


def _count_compiling(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """From now on, the model of every query Django compiles to SQL, in order."""
    from django.db.models.sql.compiler import SQLCompiler

    compiled: list[Any] = []
    as_sql = SQLCompiler.as_sql

    def counting(self: SQLCompiler, *args: Any, **kwargs: Any) -> Any:
        compiled.append(self.query.model)
        return as_sql(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counting)
    return compiled


def test_compiled_once_a_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of it: after the first run, Django compiles nothing."""
    compiled = _count_compiling(monkeypatch)
    server = Connection.objects.create(name="one", url="http://127.0.0.1:9/mcp")
    prepared = Prepared(_authorizations, int, int)
    assert prepared.first(server.pk, 1) is None
    assert compiled == [Authorization]
    for user_id in range(2, 6):
        assert prepared.first(server.pk, user_id) is None
        assert not prepared.exists(server.pk, user_id)
    assert compiled == [Authorization, Authorization]
    # The ORM itself compiles every time.
    _authorizations(server.pk, 2).first()
    assert compiled == [Authorization, Authorization, Authorization]


def test_related_rows_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ada = make_user("ada")
    server = Connection.objects.create(name="one", url="http://127.0.0.1:9/mcp")
    call = Call.objects.create(
        connection=server, method=Call.Method.TOOL, target="t", started_by=ada
    )
    rounds = [Round.objects.create(call=call, index=n, assigned_user=ada) for n in range(1, 4)]
    compiled = _count_compiling(monkeypatch)
    prepared = Prepared(lambda pk: Round.objects.select_related(*_RELATIONS).filter(pk=pk), int)
    for round in rounds:
        with CaptureQueriesContext(connection) as read:
            got = prepared.first(round.pk)
            assert got is not None and got.assigned_user == ada and got.call.connection == server
            assert got.claimed_by is None and got.call.started_by == ada
        assert len(read) == 1
    assert compiled == [Round]


def test_only_the_named_fields_are_read() -> None:
    ada = make_user("ada")
    server = Connection.objects.create(name="one", url="http://127.0.0.1:9/mcp")
    call = _call_with_credentials(server, ada)
    Round.objects.create(call=call, index=1)
    Round.objects.create(call=call, index=2)
    newest = Prepared(
        lambda pk: Round.objects.filter(call_id=pk).order_by("-index").only("index"), int
    )
    got = newest.first(call.pk)
    assert got is not None and got.index == 2
    assert (
        got.get_deferred_fields()
        == Round.objects.only("index").get(pk=got.pk).get_deferred_fields()
    )


# -- rows with their related rows (select_related) -------------------------------------------

# What the round pages read a round with.
_RELATIONS = _ROUND_RELATIONS


def _fields_of(obj: Any) -> dict[str, Any]:
    return {field.attname: getattr(obj, field.attname) for field in obj._meta.concrete_fields}


def _same_graph(got: Any, expected: Any) -> None:
    """``got`` is ``expected`` field for field, and so is every related row it was read with
    (None where the ORM's is None), with nothing left to read later."""
    assert type(got) is type(expected) and _fields_of(got) == _fields_of(expected)
    for field in type(expected)._meta.concrete_fields:
        if not field.is_relation or not field.is_cached(expected):
            continue
        assert field.is_cached(got), field.name
        related, want = field.get_cached_value(got), field.get_cached_value(expected)
        if want is None:
            assert related is None, field.name
        else:
            _same_graph(related, want)


def _call_with_credentials(server: Connection, person: Any) -> Call:
    """A call whose credentials are encrypted at rest (rows must come back decrypted)."""
    return Call.objects.create(
        connection=server,
        method=Call.Method.TOOL,
        target="deploy",
        started_by=person,
        credentials={"token": "secret"},
    )


def test_related_rows_are_the_querysets_every_one_of_them() -> None:
    ada, bob = make_user("ada"), make_user("bob")
    team = Group.objects.create(name="team")
    server = Connection.objects.create(
        name="one", url="http://127.0.0.1:9/mcp", bearer_token="secret-token"
    )
    call = _call_with_credentials(server, ada)
    routed = Round.objects.create(
        call=call,
        index=1,
        assigned_user=bob,
        request_state="opaque-state",
        input_requests={"q": {"method": "elicitation/create"}},
    )
    grouped = Round.objects.create(
        call=call, index=2, assigned_group=team, claimed_by=bob, answered_by=ada
    )

    def build(pk: int) -> Any:
        return Round.objects.select_related(*_RELATIONS).filter(pk=pk)

    prepared = Prepared(build, int)
    for pk in (routed.pk, grouped.pk, grouped.pk + 100):
        with CaptureQueriesContext(connection) as orm:
            expected = build(pk).first()
        with CaptureQueriesContext(connection) as ours:
            got = prepared.first(pk)
        assert len(ours) == len(orm) == 1
        if expected is None:
            assert got is None
            continue
        assert got is not None
        with CaptureQueriesContext(connection) as later:
            _same_graph(got, expected)
            # What the pages read of it comes with it: no query.
            assert got.call.connection.bearer_token == "secret-token"  # decrypted
            assert got.call.credentials == {"token": "secret"}
            assert got.call.started_by.username == "ada"
            assert (got.assigned_user, got.assigned_group) in ((bob, None), (None, team))
        assert not later.captured_queries
    assert prepared.first(routed.pk).request_state == "opaque-state"
    # Several rows, in the queryset's order.
    every = Prepared(lambda pk: Round.objects.select_related("call").filter(call_id=pk), int)
    assert [r.pk for r in every.all(call.pk)] == [routed.pk, grouped.pk]
    assert all(r.call.target == "deploy" for r in every.all(call.pk))


def test_datetimes_are_sent_as_the_orm_sends_them() -> None:
    """A moment is adapted by the backend (SQLite keeps text in UTC): the rows on either side
    of it, in any time zone it is given in, are the ORM's."""
    ada = make_user("ada")
    server = Connection.objects.create(name="one", url="http://127.0.0.1:9/mcp")
    base = datetime(2026, 12, 5, 6, 0, 0, 500000, tzinfo=UTC)
    calls = [
        Call.objects.create(
            connection=server,
            method=Call.Method.TOOL,
            target="t",
            started_by=ada,
            created_at=base + timedelta(microseconds=n),
        )
        for n in (-1, 0, 1)
    ]

    def build(after: datetime, before: datetime) -> Any:
        return Call.objects.filter(created_at__gt=after, created_at__lte=before).order_by("pk")

    prepared = Prepared(build, datetime, datetime)
    elsewhere = timezone_of_offset(timedelta(hours=-5))
    for after in (base - timedelta(seconds=1), base, base.astimezone(elsewhere)):
        before = after + timedelta(microseconds=1)
        with CaptureQueriesContext(connection) as orm:
            expected = list(build(after, before))
        with CaptureQueriesContext(connection) as ours:
            got = prepared.all(after, before)
        assert [c.pk for c in got] == [c.pk for c in expected]
        assert len(ours) == len(orm) == 1
    assert [c.pk for c in prepared.all(base, base + timedelta(microseconds=1))] == [calls[2].pk]


def test_the_session_store_reads_what_djangos_reads() -> None:
    """The session lookup of every signed-in request, prepared: the same session, none once it
    expired or for a key nobody holds, and one store reads what the other wrote."""
    from django.contrib.sessions.backends.db import SessionStore as DjangoStore

    from mrtrweb.accounts.sessions import SessionStore

    theirs = DjangoStore()
    theirs["who"] = "ada"
    theirs.create()
    ours = SessionStore(theirs.session_key)
    with CaptureQueriesContext(connection) as read:
        assert ours["who"] == "ada"
    assert len(read) == 1
    ours["who"] = "bob"
    ours.save()
    assert DjangoStore(theirs.session_key)["who"] == "bob"
    assert "who" not in SessionStore("no-such-session-key-at-all")
    Session.objects.filter(pk=theirs.session_key).update(
        expire_date=django_now() - timedelta(seconds=1)
    )
    expired = SessionStore(theirs.session_key)
    assert "who" not in expired and expired.session_key is None


def test_row_conversions_are_the_orms() -> None:
    """A statement written out by hand converts its columns as the ORM would (here a person's
    times and flags)."""
    from django.contrib.auth import get_user_model
    from django.db import connections

    from mrtrweb.db.prepared import RowConversions

    User = get_user_model()
    ada = make_user("ada", is_staff=True)
    ada.last_login = datetime(2026, 12, 7, 13, 0, tzinfo=UTC)
    ada.save()
    table = User._meta.db_table
    columns = [User._meta.get_field(name).get_col(table) for name in ("last_login", "is_staff")]
    conversions = RowConversions(columns)
    wrapper = connections["default"]
    sql = f'SELECT "last_login", "is_staff" FROM "{table}" WHERE "id" = %s'
    for _ in range(2):
        with wrapper.cursor() as cursor:
            cursor.execute(sql, [ada.pk])
            values = list(cursor.fetchone())
        conversions.convert(values, wrapper)
        assert values == [ada.last_login, True]
