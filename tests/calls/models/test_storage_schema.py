"""What the calls tables store per parked round (P5), on PostgreSQL as deployed: JSON that
nothing looks inside is kept as ``json`` text, read back whole, in the writer's key order; the
routing indexes hold only the rounds routed their way, and their migration goes both ways."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.app_shell import shell_json
from tests.support.processes import ServedApp, app_environment
from tests.support.services import scratch_postgres

# Run in the migrated database (manage.py shell): the columns' types, and a round trip.
CHECK = """
import json
from django.contrib.auth import get_user_model
from django.db import connection
from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.servers.models import Connection

with connection.cursor() as cursor:
    cursor.execute(
        "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
        "WHERE table_name IN ('calls_call', 'calls_round', 'calls_event') "
        "AND data_type IN ('json', 'jsonb')"
    )
    types = dict(cursor.fetchall())
user = get_user_model().objects.create(username="ada")
server = Connection.objects.create(name="s", url="http://127.0.0.1:9/mcp")
asked = {"zeta": {"method": "elicitation/create", "params": {"message": "Grüße, ok?"}},
         "alpha": {"n": [1, 2.5, None, True], "s": "\\u0000 nul", "x": "é"}}
call = Call.objects.create(connection=server, method="tools/call", target="t",
                           started_by=user, policy={"b": 1, "a": 2})
round = Round.objects.create(call=call, index=1, input_requests=asked,
                             expires_at=call.created_at)
Event.objects.create(call=call, round=round, kind="round_parked", detail={"index": 1})
round = Round.objects.get(pk=round.pk)
with connection.cursor() as cursor:
    cursor.execute("SELECT input_requests::text FROM calls_round WHERE id = %s", [round.pk])
    (stored,) = cursor.fetchone()
print(json.dumps({
    "types": types,
    "same": round.input_requests == asked,
    "order": list(round.input_requests),
    "stored": stored,
    "policy": Call.objects.get(pk=call.pk).policy,
    "tool": Call.objects.get(pk=call.pk).tool,
    "detail": Event.objects.get().detail,
    "listed": list(Round.objects.values_list("input_requests", flat=True)) == [asked],
}))
"""


def test_json_read_whole_is_json_text_on_postgresql(tmp_path: Path) -> None:
    with scratch_postgres("mrtrweb_schema") as url:
        app = ServedApp(tmp_path, app_environment(tmp_path, DATABASE_URL=url))
        app.migrate(static=False)
        seen = shell_json(app, CHECK)
    # Kept as text: the round's questions, the events' details, the call's policy and tool.
    for column in ("calls_round.input_requests", "calls_event.detail", "calls_call.policy"):
        assert seen["types"][column] == "json", column
    assert seen["types"]["calls_call.tool"] == "json"
    # Looked inside (the result's isError and text, by the inbox and the call list): jsonb.
    assert seen["types"]["calls_call.result"] == "jsonb"
    # Read back whole and equal, in the order written, stored compact and in UTF-8.
    assert seen["same"] and seen["listed"]
    assert seen["order"] == ["zeta", "alpha"]
    assert '"message":"Grüße, ok?"' in seen["stored"]
    assert ", " not in seen["stored"].replace("Grüße, ok?", "") and ": " not in seen["stored"]
    assert seen["policy"] == {"b": 1, "a": 2} and seen["tool"] is None
    assert seen["detail"] == {"index": 1}


ROUTING_INDEXES = """
import json
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE indexname IN "
        "('round_assignee_status', 'round_group_status')"
    )
    print(json.dumps(dict(cursor.fetchall())))
"""


def _routing_indexes(app: ServedApp) -> dict[str, str]:
    printed = app.manage("shell", "-c", ROUTING_INDEXES, timeout=300).stdout
    return json.loads(printed.strip().splitlines()[-1])


# Three migrate runs and three shells, each a Django start-up.
@pytest.mark.timeout(600)
def test_routing_indexes_hold_only_routed_rounds_and_migrate_both_ways(tmp_path: Path) -> None:
    """A round is routed to a user or a group: each routing index holds only the rounds routed
    its way (0016), and unapplying it brings back the full indexes."""
    with scratch_postgres("mrtrweb_routing") as url:
        app = ServedApp(tmp_path, app_environment(tmp_path, DATABASE_URL=url))
        app.migrate(static=False)
        partial = _routing_indexes(app)
        assert partial["round_assignee_status"].endswith("WHERE (assigned_user_id IS NOT NULL)")
        assert partial["round_group_status"].endswith("WHERE (assigned_group_id IS NOT NULL)")
        app.manage("migrate", "calls", "0015", "-v0", timeout=300)
        full = _routing_indexes(app)
        assert set(full) == set(partial)
        assert all("WHERE" not in definition for definition in full.values())
        app.manage("migrate", "-v0", timeout=300)
        assert _routing_indexes(app) == partial
