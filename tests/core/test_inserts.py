"""New rows written with the INSERT compiled once (mrtrweb/db/inserts.py): the row Django's
``save()`` writes, the key set, the signals sent, the statement compiled once a model, and
what it does not prepare saved by the ORM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models.functions import Now
from django.db.models.signals import post_save, pre_save
from django.db.models.sql.compiler import SQLInsertCompiler

from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.db import inserts
from mrtrweb.db.inserts import insert
from mrtrweb.servers.models import Connection
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 12, 5, 9, 30, 15, 123456, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _nothing_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each test compiles its own statements: none is kept from another test.
    monkeypatch.setattr(inserts, "_statements", {})


@pytest.fixture
def world() -> dict[str, Any]:
    server = Connection.objects.create(
        name="one", url="http://127.0.0.1:9/mcp", bearer_token="s3cret"
    )
    return {"server": server, "ada": make_user("ada"), "bob": make_user("bob")}


def _call(w: dict[str, Any], **extra: Any) -> Call:
    return Call(
        connection=w["server"],
        method=Call.Method.TOOL,
        target="deploy",
        arguments_json='{"where": "Bergen \\u00e6"}',
        credentials={"bearer_token": "s3cret", "headers": {"X-Team": "ops"}},
        started_by=w["ada"],
        route_user=w["bob"],
        policy={"approvals_required": 2},
        created_at=T0,
        updated_at=T0,
        **extra,
    )


def _round(call: Call, index: int, w: dict[str, Any]) -> Round:
    requests = {"confirm": {"method": "elicitation/create", "params": {"message": "Go? æ"}}}
    parked = Round(
        call=call,
        index=index,
        input_requests=requests,
        summary=Round.summary_of(requests),
        created_at=T0,
        expires_at=T0 + timedelta(minutes=10),
        assigned_user=w["bob"],
        delegated_from=w["ada"],
        heard_at=T0,
        owner="web-1",
    )
    parked.set_request_state("opaque state æ")
    return parked


def _row(model: type, pk: int) -> dict[str, Any]:
    """The row as stored, column by column (no field conversions), without its key."""
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} WHERE id = %s", [pk])
        names = [column[0] for column in cursor.description]
        return {n: v for n, v in zip(names, cursor.fetchone(), strict=True) if n != "id"}


def _read(model: type, pk: int) -> dict[str, Any]:
    """The row as the app reads it (tokens decrypted), without its key and the moment it
    was saved (``auto_now``: checked on its own)."""
    values = model.objects.filter(pk=pk).values()[0]
    if "updated_at" in values:
        assert abs(values.pop("updated_at") - datetime.now(UTC)) < timedelta(minutes=1)
    return {k: v for k, v in values.items() if k != "id"}


def test_a_call_a_round_and_an_event_are_the_rows_save_writes(world: dict[str, Any]) -> None:
    ours, djangos = _call(world), _call(world)
    insert(ours)
    djangos.save()
    assert isinstance(ours.pk, int) and ours.pk != djangos.pk
    assert not ours._state.adding and ours._state.db == "default"
    # Credentials are sealed anew each time: equal once read, different as stored.
    assert _read(Call, ours.pk) == _read(Call, djangos.pk)
    stored, theirs = _row(Call, ours.pk), _row(Call, djangos.pk)
    assert stored.pop("credentials") != theirs.pop("credentials")
    del stored["updated_at"], theirs["updated_at"]
    assert stored == theirs

    ours_round, djangos_round = _round(ours, 1, world), _round(djangos, 1, world)
    insert(ours_round)
    djangos_round.save()
    assert _read(Round, ours_round.pk) == {
        **_read(Round, djangos_round.pk),
        "call_id": ours.pk,
    }
    assert Round.objects.get(pk=ours_round.pk).request_state == "opaque state æ"

    for call, parked, save in ((ours, ours_round, insert), (djangos, djangos_round, Event.save)):
        save(
            Event(
                call=call,
                round=parked,
                kind="round_parked",
                actor=world["bob"],
                detail={"index": 1, "why": "æ"},
                created_at=T0,
            )
        )
    ours_event, djangos_event = Event.objects.order_by("pk")
    assert _row(Event, ours_event.pk) == {
        **_row(Event, djangos_event.pk),
        "call_id": ours.pk,
        "round_id": ours_round.pk,
    }


def test_defaults_and_the_fields_own_pre_save_are_applied(world: dict[str, Any]) -> None:
    call = Call(connection=world["server"], method=Call.Method.TOOL, target="t")
    call.started_by = world["ada"]
    insert(call)
    stored = Call.objects.get(pk=call.pk)
    assert stored.status == Call.Status.RUNNING
    assert stored.rounds_used == 0 and stored.policy == {} and stored.result is None
    assert abs(stored.created_at - datetime.now(UTC)) < timedelta(minutes=1)


def test_the_statement_is_compiled_once_a_model(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled: list[str] = []
    as_sql = SQLInsertCompiler.as_sql

    def counting(self: SQLInsertCompiler, *args: Any, **kwargs: Any) -> Any:
        compiled.append(self.query.model._meta.label)
        return as_sql(self, *args, **kwargs)

    monkeypatch.setattr(SQLInsertCompiler, "as_sql", counting)
    calls = [_call(world) for _ in range(3)]
    for call in calls:
        insert(call)
    for n, call in enumerate(calls):
        insert(_round(call, n + 1, world))
        insert(Event(call=call, kind="started"))
    assert sorted(compiled) == ["calls.Call", "calls.Event", "calls.Round"]
    assert Call.objects.count() == 3 and Round.objects.count() == 3
    assert Event.objects.count() == 3


def test_the_signals_are_sent_as_save_sends_them(world: dict[str, Any]) -> None:
    heard: list[tuple[str, Any]] = []

    def before(sender: Any, instance: Any, **kwargs: Any) -> None:
        heard.append(("pre", instance.pk, kwargs["raw"], kwargs["update_fields"]))
        instance.kind = "changed before saving"

    def after(sender: Any, instance: Any, **kwargs: Any) -> None:
        heard.append(("post", instance.pk, kwargs["created"], kwargs["using"]))

    pre_save.connect(before, sender=Event)
    post_save.connect(after, sender=Event)
    try:
        call = _call(world)
        insert(call)
        event = Event(call=call, kind="started")
        insert(event)
    finally:
        pre_save.disconnect(before, sender=Event)
        post_save.disconnect(after, sender=Event)
    assert heard == [("pre", None, False, None), ("post", event.pk, True, "default")]
    # What a pre_save receiver changed is what is stored.
    assert Event.objects.get(pk=event.pk).kind == "changed before saving"


def test_an_expression_an_object_with_its_key_and_an_unsaved_relation(
    world: dict[str, Any],
) -> None:
    call = _call(world)
    insert(call)
    # A value that is an expression is compiled into the statement: the ORM writes it.
    event = Event(call=call, kind="started", created_at=Now())
    insert(event)
    stored = Event.objects.get(pk=event.pk)
    assert abs(stored.created_at - datetime.now(UTC)) < timedelta(minutes=1)
    assert not event._state.adding
    # An object that has its key is saved as save() saves it (an update, here).
    call.target = "renamed"
    insert(call)
    assert Call.objects.get(pk=call.pk).target == "renamed"
    assert Call.objects.count() == 1
    # A relation not saved yet is refused as save() refuses it.
    with pytest.raises(ValueError, match="unsaved related object"):
        insert(Event(call=_call(world), kind="started"))


def test_a_refused_row_marks_the_transaction_for_rollback(world: dict[str, Any]) -> None:
    call = _call(world)
    insert(call)
    insert(_round(call, 1, world))
    with transaction.atomic():
        with pytest.raises(IntegrityError):
            insert(_round(call, 1, world))  # the same number twice
        # As after save(): nothing more in this transaction until it is rolled back.
        with pytest.raises(transaction.TransactionManagementError):
            Round.objects.count()
    assert Round.objects.count() == 1


def test_a_statement_that_cannot_be_kept_leaves_the_row_to_save(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A backend that writes bytes with a placeholder of its own (as MySQL does): the round,
    # with its encrypted state, is saved by save() every time, and rightly.
    ops = type(connection.ops)
    monkeypatch.setattr(ops, "binary_placeholder_sql", lambda self, value: "%s", raising=False)
    call = _call(world)
    insert(call)
    parked = _round(call, 1, world)
    insert(parked)
    assert inserts._statements[(Round, "default", connection.vendor)] is None
    assert Round.objects.get(pk=parked.pk).request_state == "opaque state æ"
    assert inserts._statements[(Call, "default", connection.vendor)] is not None
