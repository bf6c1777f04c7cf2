"""Rows the benchmarks need, written straight into the bench database from this process.

Django is set up here only after :func:`bench.stack.stack` has pointed the environment at the
bench database; nothing in this module may be imported before that.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import django


def setup_django() -> None:
    import logging

    django.setup()
    # The engine's event log would drown the table; warnings and errors still show.
    logging.disable(logging.INFO)


def prepare(mcp_url: str) -> dict[str, Any]:
    """Users (a person and an admin), the connection with its catalog, the tool exposed."""
    from django.contrib.auth import get_user_model
    from django_otp.plugins.otp_totp.models import TOTPDevice

    from mrtrweb.servers.catalog import refresh_catalog
    from mrtrweb.servers.models import Connection, ToolExposure
    from tests.support.second_factor import HARNESS_KEY, HARNESS_STEP

    from .stack import ADMIN, CONNECTION, PASSWORD, PERSON, TOOL

    users = get_user_model()
    person = users.objects.create_user(PERSON, password=PASSWORD)
    admin = users.objects.create_superuser(ADMIN, password=PASSWORD)
    # Admins pass two-step sign-in: the admin's pages are measured with a verified session,
    # signed in with the test harness's authenticator (tests/support/second_factor.py).
    TOTPDevice.objects.create(user=admin, key=HARNESS_KEY, step=HARNESS_STEP, confirmed=True)
    connection = Connection.objects.create(name=CONNECTION, title="Bench server", url=mcp_url)
    refresh_catalog(connection)
    connection.refresh_from_db()
    if connection.tool(TOOL) is None:
        raise RuntimeError(f"the bench server's catalog has no {TOOL!r}: {connection.catalog}")
    ToolExposure.objects.create(connection=connection, tool_name=TOOL, exposed=True)
    return {"person": person, "admin": admin, "connection": connection}


def park(context: dict[str, Any]) -> Any:
    """One call of the bench tool through the engine, as the person; it must park a round."""
    from mrtrweb.calls import engine
    from mrtrweb.calls.models import Call

    from .stack import TOOL

    call = engine.start_call(
        connection=context["connection"],
        method=Call.Method.TOOL,
        target=TOOL,
        arguments={},
        user=context["person"],
    )
    if call.status != Call.Status.WAITING:
        raise RuntimeError(f"the bench call did not park: {call.status} {call.error}")
    return call


# A realistic parked round: the bench tool's question, a sealed-state-sized requestState.
_REQUESTS = {
    "confirm": {
        "method": "elicitation/create",
        "params": {
            "message": "Go ahead with deploy?",
            "mode": "form",
            "requestedSchema": {
                "type": "object",
                "properties": {"ok": {"type": "boolean", "title": "OK"}},
                "required": ["ok"],
            },
        },
    }
}


def pending_count() -> int:
    from mrtrweb.calls.models import Round

    return Round.objects.filter(status=Round.Status.PENDING).count()


def seed_pending(target: int, *, person: Any, connection: Any) -> float:
    """Add pending rounds (one call each, routed to ``person``) until ``target`` are pending.
    Returns the seconds it took.

    One ``INSERT ... SELECT`` per table: 100,000 rows in seconds, where ``bulk_create`` spends
    a third of a millisecond per row in Python. The values come from model instances (each
    field's own default and encoding, the encrypted requestState included), so columns added
    later are filled the way Django would fill them.
    """
    import time

    from django.db import connection as db
    from django.db import transaction
    from django.db.models import Max
    from django.utils import timezone

    from mrtrweb.calls.models import Call, Round

    started = time.perf_counter()
    missing = target - pending_count()
    if missing <= 0:
        return 0.0
    now = timezone.now()
    call = Call(
        connection=connection,
        method=Call.Method.TOOL,
        target="confirm",
        arguments_json="{}",
        tool=connection.catalog["tools"][0],
        started_by=person,
        status=Call.Status.WAITING,
        rounds_used=1,
        created_at=now,
    )
    parked = Round(
        index=1,
        input_requests=_REQUESTS,
        summary="Go ahead with deploy?",
        assigned_user=person,
        expires_at=now + timedelta(minutes=10),
        created_at=now,
    )
    parked.set_request_state("v1." + "x" * 400)
    with transaction.atomic(), db.cursor() as cursor:
        first_new = (Call.objects.aggregate(top=Max("pk"))["top"] or 0) + 1
        # Each call a second older than the one before: lists order by (created_at, id), and
        # a hundred thousand equal timestamps would make that a sort of them all.
        stamp = Call._meta.get_field("created_at").get_db_prep_save(now, connection=db)
        older = (
            "CAST(%s AS timestamptz) - n * interval '1 second'"
            if db.vendor == "postgresql"
            else "datetime(%s, '-' || n || ' seconds')"
        )
        columns, values, params = _row(db, call, {"created_at": (older, [stamp])})
        cursor.execute(
            f"INSERT INTO {Call._meta.db_table} ({columns}) "
            "WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < %s) "
            f"SELECT {values} FROM seq",
            [missing, *params],
        )
        columns, values, params = _row(
            db, parked, {"call_id": ("c.id", []), "created_at": ("c.created_at", [])}
        )
        cursor.execute(
            f"INSERT INTO {Round._meta.db_table} ({columns}) "
            f"SELECT {values} FROM {Call._meta.db_table} c WHERE c.id >= %s",
            [*params, first_new],
        )
    return time.perf_counter() - started


def _row(
    db: Any, instance: Any, given: dict[str, tuple[str, list[Any]]]
) -> tuple[str, str, list[Any]]:
    """Columns, the SELECT list and its parameters for copies of ``instance``; ``given`` maps
    a column to an SQL expression (and its parameters) instead."""
    columns, values, params = [], [], []
    for field in instance._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(db.ops.quote_name(field.column))
        if field.column in given:
            expression, extra = given[field.column]
            values.append(expression)
            params.extend(extra)
            continue
        params.append(field.get_db_prep_save(field.pre_save(instance, add=True), connection=db))
        # PostgreSQL types a bare parameter in a SELECT list as text.
        values.append(f"CAST(%s AS {field.db_type(db)})" if db.vendor == "postgresql" else "%s")
    return ", ".join(columns), ", ".join(values), params
