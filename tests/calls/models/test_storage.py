"""What a parked round stores, kept small (P5) without losing what it must keep.

The requestState is sealed compactly and still reads byte for byte (also after a key
rotation); a call without credentials stores ``{}`` in
clear, still distinct from ``None``; a call keeps only what its later rounds need of its tool;
the round_parked event leaves the questions to the round, and the audit trail still shows them.
"""

from __future__ import annotations

import base64
import io
from dataclasses import replace
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection as db
from django.db.models import F

from mrtrweb.calls import engine
from mrtrweb.calls.engine import digests
from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.encryption import crypto
from mrtrweb.mcp.headers import header_schema, x_mcp_header_map
from tests.calls.engine.delivery_support import park_approval
from tests.dashboard.support import make_connection, make_round
from tests.factories import CallFactory

pytestmark = pytest.mark.django_db

# Shaped like the SDK's sealed requestState ("v1." then unpadded base64url).
TOKEN = "v1." + base64.urlsafe_b64encode(bytes(range(200))).rstrip(b"=").decode()
STATES = [
    TOKEN,
    "v1.QUI",  # too short to be worth compacting
    "v1.abcDEF_-012",  # base64url that does not re-encode to itself: kept as text
    '{"step": 2, "note": "héllo"}',
    "a.b.c.d.e.f.g",
    "",
]


def stored_state(round_id: int) -> Any:
    with db.cursor() as cursor:
        cursor.execute("SELECT request_state FROM calls_round WHERE id = %s", [round_id])
        return cursor.fetchone()[0]


def put_state(round_id: int, value: Any) -> None:
    with db.cursor() as cursor:
        cursor.execute("UPDATE calls_round SET request_state = %s WHERE id = %s", [value, round_id])


@pytest.mark.parametrize("state", STATES)
def test_a_request_state_reads_back_byte_for_byte(user: Any, state: str) -> None:
    round = make_round(connection=make_connection(), starter=user, request_state=state)
    assert Round.objects.get(pk=round.pk).request_state == state
    raw = bytes(stored_state(round.pk))
    if state:
        assert crypto.is_sealed(raw)
        assert state.encode() not in raw
    assert Round.objects.get(pk=round.pk).request_state_sha256 == round.request_state_sha256


def test_a_sealed_state_is_smaller_than_a_fernet_token_of_it(user: Any) -> None:
    round = make_round(connection=make_connection(), starter=user, request_state=TOKEN)
    # 200 bytes of base64url (267 characters): sealed, its decoded bytes plus 31 and the
    # prefix; a Fernet text token of the state was 448 characters.
    assert len(bytes(stored_state(round.pk))) <= 200 + 31 + 5
    assert len(crypto.encrypt(TOKEN)) > 400


def test_sealed_states_survive_a_key_rotation(user: Any, settings: Any) -> None:
    old = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [old]
    round = make_round(connection=make_connection(), starter=user, request_state=TOKEN)
    new = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [new, old]
    assert Round.objects.get(pk=round.pk).request_state == TOKEN
    call_command("rotate_secrets", stdout=io.StringIO())
    settings.FERNET_KEYS = [new]
    assert Round.objects.get(pk=round.pk).request_state == TOKEN
    assert crypto.is_sealed(bytes(stored_state(round.pk)))
    # Without the key it was sealed under, it does not read.
    settings.FERNET_KEYS = [old]
    with pytest.raises(crypto.SecretUnreadable):
        Round.objects.get(pk=round.pk)


def test_a_tampered_state_does_not_read(user: Any) -> None:
    round = make_round(connection=make_connection(), starter=user, request_state=TOKEN)
    raw = bytearray(bytes(stored_state(round.pk)))
    raw[-1] ^= 1
    put_state(round.pk, bytes(raw))
    with pytest.raises(crypto.SecretUnreadable):
        Round.objects.get(pk=round.pk)


# -- credentials ----------------------------------------------------------------------------


def stored_credentials(call_id: int) -> Any:
    with db.cursor() as cursor:
        cursor.execute("SELECT credentials FROM calls_call WHERE id = %s", [call_id])
        return cursor.fetchone()[0]


def test_no_credentials_are_stored_as_an_empty_object_in_clear(user: Any) -> None:
    conn = make_connection()
    empty = CallFactory(connection=conn, started_by=user)
    Call.objects.filter(pk=empty.pk).update(credentials={})
    unset = CallFactory(connection=conn, started_by=user)
    secret = CallFactory(
        connection=conn, started_by=user, credentials={"bearer_token": "tok-9", "headers": {}}
    )
    assert stored_credentials(empty.pk) == "{}"
    assert stored_credentials(unset.pk) is None
    assert "tok-9" not in stored_credentials(secret.pk)
    assert Call.objects.get(pk=empty.pk).credentials == {}
    assert Call.objects.get(pk=unset.pk).credentials is None
    assert Call.objects.get(pk=secret.pk).credentials["bearer_token"] == "tok-9"
    # {} means "none", not "the connection's current ones" (which None means).
    conn.bearer_token = "now-set"
    conn.save()
    assert conn.client_settings({}).bearer_token is None
    assert conn.client_settings(None).bearer_token == "now-set"


def test_a_call_keeps_its_credentials_and_only_what_rounds_need_of_its_tool(
    fastmcp_peer: Any, user: Any
) -> None:
    call = park_approval(fastmcp_peer, user).call
    conn = call.connection
    assert stored_credentials(call.pk) == "{}"
    listed = conn.tool("approve_deploy")
    assert listed is not None
    has_headers = bool(x_mcp_header_map(listed.input_schema))
    idempotent = bool(listed.annotations and listed.annotations.idempotent_hint)
    if not has_headers and not idempotent:
        assert call.tool is None
    else:
        assert call.tool["name"] == "approve_deploy"
    # With a token, the call keeps it (encrypted) for every later round.
    conn.bearer_token = "tok-1"
    conn.save()
    second = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=user,
    )
    assert "tok-1" not in stored_credentials(second.pk)
    assert Call.objects.get(pk=second.pk).credentials["bearer_token"] == "tok-1"


def test_tool_for_rounds_keeps_header_mirroring_and_idempotence_only() -> None:
    schema = {
        "type": "object",
        "description": "long text " * 20,
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region", "description": "where"},
            "spec": {
                "type": "object",
                "properties": {"tier": {"type": "integer", "x-mcp-header": "Tier"}},
            },
            "note": {"type": "string"},
        },
    }
    tool = {
        "name": "deploy",
        "description": "Deploys.",
        "inputSchema": schema,
        "annotations": {"idempotentHint": True, "title": "Deploy"},
    }
    kept = Call.tool_for_rounds(tool)
    assert kept is not None
    assert set(kept) == {"name", "inputSchema", "annotations"}
    assert kept["annotations"] == {"idempotentHint": True}
    assert x_mcp_header_map(kept["inputSchema"]) == x_mcp_header_map(schema)
    assert "note" not in kept["inputSchema"]["properties"]
    plain = {"name": "echo", "inputSchema": {"type": "object", "properties": {"t": {}}}}
    assert Call.tool_for_rounds(plain) is None
    assert Call.tool_for_rounds({**plain, "annotations": {"idempotentHint": True}}) == {
        "name": "echo",
        "inputSchema": {"type": "object"},
        "annotations": {"idempotentHint": True},
    }
    assert header_schema({"type": "object", "properties": {"a": {"x-mcp-header": "A"}}}) is None


# -- the audit trail ------------------------------------------------------------------------


def test_the_parked_event_leaves_the_questions_to_the_round(fastmcp_peer: Any, user: Any) -> None:
    from mrtrweb.dashboard.audit import event_views, round_digests

    round = park_approval(fastmcp_peer, user)
    call = round.call
    parked = Event.objects.get(call=call, kind="round_parked")
    assert "asked" not in parked.detail
    # Nor the round's number: the audit trail reads it from the round (round__index).
    assert "index" not in parked.detail
    # The state's digest is stored compact (43 characters of base64url, not 64 of hex) and
    # shown as hex.
    stored = parked.detail["request_state_sha256"]
    assert len(stored) == 43 and len(round.request_state_sha256) == 64
    assert digests.shown(stored) == round.request_state_sha256
    (view,) = [v for v in event_views(Event.objects.filter(pk=parked.pk)) if v.asked]
    assert view.request_state_sha256 == round.request_state_sha256
    (key, request) = next(iter(round.input_requests.items()))
    assert view.asked[0].key == key
    assert view.asked[0].message == request["params"]["message"]
    (digest,) = round_digests(Round.objects.filter(pk=round.pk).defer("request_state"))
    assert digest.request_state_sha256 == round.request_state_sha256


def test_a_parked_event_shows_the_same_with_or_without_a_stored_number(
    fastmcp_peer: Any, user: Any
) -> None:
    """Events stored before the number was left to the round still hold it: both show alike."""
    from mrtrweb.dashboard.audit import event_views

    call = park_approval(fastmcp_peer, user).call
    parked = Event.objects.get(call=call, kind="round_parked")
    old = Event.objects.create(
        call=call,
        round=parked.round,
        kind="round_parked",
        detail={"index": 1, **parked.detail},
        created_at=parked.created_at,
    )
    numbered = Event.objects.annotate(round_index=F("round__index")).order_by("id")
    new_view, old_view = event_views(numbered.filter(pk__in=[parked.pk, old.pk]))
    assert new_view.round_index == old_view.round_index == 1
    assert replace(new_view, pk=old_view.pk) == old_view


def test_a_digest_stored_in_hex_shows_as_a_compact_one_does(fastmcp_peer: Any, user: Any) -> None:
    """Events stored before the digest was kept compact hold it in hex: both show alike, on
    the event and in the rounds table."""
    from mrtrweb.dashboard.audit import event_views, round_digests

    round = park_approval(fastmcp_peer, user)
    call = round.call
    parked = Event.objects.get(call=call, kind="round_parked")
    old = Event.objects.create(
        call=call,
        round=round,
        kind="round_parked",
        detail={**parked.detail, "request_state_sha256": round.request_state_sha256},
        created_at=parked.created_at,
    )
    new_view, old_view = event_views(Event.objects.filter(pk__in=[parked.pk, old.pk]))
    assert new_view.request_state_sha256 == old_view.request_state_sha256
    assert new_view.request_state_sha256 == round.request_state_sha256
    parked.delete()
    (digest,) = round_digests(Round.objects.filter(pk=round.pk).defer("request_state"))
    assert digest.request_state_sha256 == round.request_state_sha256


@pytest.mark.parametrize("value", ["", None, 7, "not a digest", "!" * 43, "ab" * 32])
def test_whatever_an_event_holds_as_a_digest_shows_as_text(value: Any) -> None:
    shown = digests.shown(value)
    assert isinstance(shown, str)
    assert shown == (value if isinstance(value, str) else "")


def test_a_digest_round_trips_through_its_stored_form() -> None:
    from mrtrweb.calls.models import state_sha256

    hex_digest = state_sha256("opaque-state")
    assert digests.shown(digests.stored(hex_digest)) == hex_digest
    assert len(digests.stored(hex_digest)) == 43
    assert digests.stored("") == ""
