"""Updates compiled once a shape (mrtrweb/db/updates.py): the statement Django would send and
the change it would make, for the engine's transitions and any values; Django compiles it
once; what it does not prepare goes through the ORM, answered the same."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from datetime import timezone as timezone_of_offset
from decimal import Decimal
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.db.models.sql.compiler import SQLUpdateCompiler
from django.test.utils import CaptureQueriesContext

from mrtrweb.calls.models import Call, Round
from mrtrweb.db import updates
from mrtrweb.servers.models import Connection
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 12, 5, 9, 30, 15, 123456, tzinfo=UTC)
ELSEWHERE = timezone_of_offset(timedelta(hours=5, minutes=30))


@pytest.fixture(autouse=True)
def _nothing_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each test compiles its own shapes: none is kept from another test.
    monkeypatch.setattr(updates, "_statements", {})


@pytest.fixture
def world() -> dict[str, Any]:
    server = Connection.objects.create(name="one", url="http://127.0.0.1:9/mcp")
    ada, bob = make_user("ada"), make_user("bob")
    call = Call.objects.create(
        connection=server, method=Call.Method.TOOL, target="deploy", started_by=ada
    )
    rounds = [
        Round.objects.create(call=call, index=1, assigned_user=ada),
        Round.objects.create(call=call, index=2, assigned_user=bob, claimed_by=bob),
        Round.objects.create(
            call=call,
            index=3,
            status=Round.Status.DELIVERING,
            delivering_since=T0,
            attempts=1,
        ),
        Round.objects.create(call=call, index=4, status=Round.Status.SUBMITTED),
    ]
    return {"call": call, "ada": ada, "bob": bob, "rounds": rounds}


Update = tuple[type, dict[str, Any], dict[str, Any]]


def _engine_updates(w: dict[str, Any], moment: datetime, who: Any) -> list[Update]:
    """The shapes of the engine's transitions (calls.engine), with these values."""
    first, claimed, delivering, submitted = w["rounds"]
    return [
        # An answer: routed as read, a JSON value, a person, Coalesce(F, Value) twice.
        (
            Round,
            {
                "pk": first.pk,
                "status__in": [Round.Status.PENDING],
                "assigned_user": who.pk,
                "assigned_group": None,
            },
            {
                "answers": {"confirm": {"action": "accept", "content": {"ok": True, "n": 3}}},
                "answered_by": who,
                "answered_at": moment,
                "claimed_by": Coalesce(F("claimed_by"), Value(who.pk)),
                "claimed_at": Coalesce(F("claimed_at"), Value(moment)),
                "status": Round.Status.SUBMITTED,
            },
        ),
        # A delivery claimed: a lookup across the call (a subquery), F + 1, None set.
        (
            Round,
            {
                "pk": submitted.pk,
                "status__in": [Round.Status.SUBMITTED],
                "call__waiting_for_authorization_since__isnull": True,
                "carrier": Round.Carrier.RETRY,
                "attempts": 0,
            },
            {
                "attempts": F("attempts") + 1,
                "delivering_since": moment,
                "heard_at": None,
                "next_attempt_at": None,
                "status": Round.Status.DELIVERING,
            },
        ),
        # Its outcome: guarded on this attempt's moment, from either of two statuses.
        (
            Round,
            {
                "pk": delivering.pk,
                "status__in": [Round.Status.DELIVERING, Round.Status.UNKNOWN],
                "delivering_since": T0,
            },
            {
                "delivered_at": moment,
                "delivery_error": "",
                "last_http_status": 200,
                "flagged_at": None,
                "status": Round.Status.DELIVERED,
            },
        ),
        # A reassignment of a claimed round, and the call completed with its result.
        (
            Round,
            {"pk": claimed.pk, "status__in": [Round.Status.PENDING], "claimed_by": who.pk},
            {"claimed_by": None, "claimed_at": None, "assigned_user": who},
        ),
        (
            Call,
            {"pk": w["call"].pk},
            {
                "status": Call.Status.COMPLETED,
                "result": {"content": [{"type": "text", "text": f"done by {who.username}"}]},
                "finished_at": moment,
                "updated_at": moment,
            },
        ),
        # A heartbeat on every round a person holds (no key).
        (
            Round,
            {"status__in": [Round.Status.PENDING, Round.Status.SUBMITTED], "assigned_user": who.pk},
            {"heard_at": moment},
        ),
    ]


def _state(model: type, pks: list[int]) -> list[dict[str, Any]]:
    rows = model._default_manager.filter(pk__in=pks).order_by("pk")
    return [
        {field.attname: getattr(row, field.attname) for field in model._meta.concrete_fields}
        for row in rows
    ]


def _both_ways(model: type, where: dict[str, Any], values: dict[str, Any]) -> None:
    """The ORM's update (rolled back), then ours: the same statement, the same rows after."""
    pks = list(model._default_manager.values_list("pk", flat=True))
    with transaction.atomic():
        with CaptureQueriesContext(connection) as orm:
            orm_count = model._default_manager.filter(**where).update(**values)
        expected = _state(model, pks)
        transaction.set_rollback(True)
    with CaptureQueriesContext(connection) as ours:
        count = updates.update(model, where, values)
    assert count == orm_count
    assert [q["sql"] for q in ours] == [q["sql"] for q in orm]
    assert _state(model, pks) == expected


def test_each_engine_update_is_the_orms_statement_and_change(world: dict[str, Any]) -> None:
    # Twice a shape: the first compiles it, the second sends the kept statement with other
    # values (another person, another moment, one in another time zone).
    later = T0.astimezone(ELSEWHERE) + timedelta(minutes=7, microseconds=1)
    for moment, who in ((T0 + timedelta(seconds=1), world["ada"]), (later, world["bob"])):
        for model, where, values in _engine_updates(world, moment, who):
            _both_ways(model, where, values)
    # Each of them kept, none left to the ORM.
    kept = list(updates._statements.values())
    assert len(kept) == len(_engine_updates(world, T0, world["ada"]))
    assert None not in kept


def test_a_round_counted_unless_the_call_finished(world: dict[str, Any]) -> None:
    """The round cap's update (calls.engine.counting): an exclusion, F + 1, under a cap."""
    call = world["call"]
    unless = {"status__in": list(Call.FINISHED)}
    for cap, moment in ((10, T0), (1, T0.astimezone(ELSEWHERE)), (10, T0 + timedelta(hours=1))):
        where = {"pk": call.pk, "rounds_used__lt": cap}
        values = {"rounds_used": F("rounds_used") + 1, "updated_at": moment}
        with transaction.atomic():
            with CaptureQueriesContext(connection) as orm:
                orm_count = Call.objects.filter(**where).exclude(**unless).update(**values)
            expected = _state(Call, [call.pk])
            transaction.set_rollback(True)
        with CaptureQueriesContext(connection) as ours:
            assert updates.update(Call, where, values, unless=unless) == orm_count
        assert [q["sql"] for q in ours] == [q["sql"] for q in orm]
        assert _state(Call, [call.pk]) == expected
    assert _state(Call, [call.pk])[0]["rounds_used"] == 2  # the cap of 1 held once
    assert None not in updates._statements.values()


def test_a_guard_that_no_longer_holds_changes_nothing(world: dict[str, Any]) -> None:
    first = world["rounds"][0]
    where = {"pk": first.pk, "status__in": [Round.Status.PENDING]}
    assert updates.update(Round, where, {"status": Round.Status.SUBMITTED}) == 1
    # The same shape again: the kept statement, whose guard now holds no row.
    assert updates.update(Round, where, {"status": Round.Status.SUBMITTED}) == 0
    assert updates.update(Round, {**where, "pk": first.pk + 1000}, {"status": "x"}) == 0
    first.refresh_from_db()
    assert first.status == Round.Status.SUBMITTED


def _count_compiling(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    compiled: list[Any] = []
    as_sql = SQLUpdateCompiler.as_sql

    def counting(self: SQLUpdateCompiler) -> Any:
        compiled.append(self.query.model)
        return as_sql(self)

    monkeypatch.setattr(SQLUpdateCompiler, "as_sql", counting)
    return compiled


def test_compiled_once_a_shape(monkeypatch: pytest.MonkeyPatch, world: dict[str, Any]) -> None:
    compiled = _count_compiling(monkeypatch)
    delivering = world["rounds"][2]

    def outcome(since: datetime | None, status: int) -> int:
        return updates.update(
            Round,
            {
                "pk": delivering.pk,
                "status__in": [Round.Status.DELIVERING],
                "delivering_since": since,
            },
            {"last_http_status": status, "heard_at": since},
        )

    assert outcome(T0, 200) == 1
    for n in range(5):
        assert outcome(T0 + timedelta(days=n + 1), 500 + n) == 0
    assert compiled == [Round]
    # None where a moment was is another statement (IS NULL), compiled once too.
    assert outcome(None, 201) == 0
    assert outcome(None, 202) == 0
    assert compiled == [Round, Round]
    # So is an IN of another length.
    updates.update(Round, {"pk": delivering.pk, "status__in": ["a", "b"]}, {"heard_at": T0})
    updates.update(Round, {"pk": delivering.pk, "status__in": ["c", "d"]}, {"heard_at": T0})
    assert compiled == [Round, Round, Round]
    delivering.refresh_from_db()
    assert delivering.last_http_status == 200


def test_what_it_cannot_keep_goes_through_the_orm(
    monkeypatch: pytest.MonkeyPatch, world: dict[str, Any]
) -> None:
    compiled = _count_compiling(monkeypatch)
    call = world["call"]
    # An encrypted field is sealed anew each time: its stand-in is never found among the
    # parameters, so the shape is the ORM's every time, and the value is stored as it stores
    # it.
    first = world["rounds"][0]
    for state in ("first-state", "second-state"):
        updates.update(Round, {"pk": first.pk}, {"request_state": state})
        first.refresh_from_db()
        assert first.request_state == state
    assert compiled == [Round] * 3  # the first run's attempt, then the ORM's, twice
    # A JSON value for a field that is not Django's JSONField: the ORM's from the start.
    for token in ("first-secret", "second-secret"):
        updates.update(Call, {"pk": call.pk}, {"credentials": {"bearer_token": token}})
        call.refresh_from_db()
        assert call.credentials == {"bearer_token": token}
    assert compiled == [Round] * 3 + [Call] * 2
    # What matches nothing whatever the values (an empty IN), or sets nothing.
    for _ in range(2):
        assert updates.update(Round, {"status__in": []}, {"heard_at": T0}) == 0
        assert updates.update(Round, {"heard_at__isnull": True}, {}) == 0
    # Values of other kinds, and a naive moment.
    runs: list[Callable[[], int]] = [
        lambda: updates.update(
            Call, {"pk": call.pk, "rounds_used__lt": Decimal("10")}, {"updated_at": T0}
        ),
        lambda: updates.update(
            Round, {"pk": call.pk, "created_at__date": date(2026, 1, 1)}, {"heard_at": T0}
        ),
    ]
    for run in runs:
        run()
    with pytest.warns(RuntimeWarning):
        updates.update(Call, {"pk": call.pk}, {"updated_at": datetime(2026, 1, 1)})
    call.refresh_from_db()
    assert call.updated_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_a_failed_update_marks_its_transaction_for_rollback(world: dict[str, Any]) -> None:
    first = world["rounds"][0]
    for _ in range(2):  # compiled, then kept
        with transaction.atomic():
            with pytest.raises(IntegrityError):
                updates.update(Round, {"pk": first.pk}, {"call_id": None})
            # As the ORM's update: the block rolls back when it ends.
            assert transaction.get_rollback()
