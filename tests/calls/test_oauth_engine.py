"""Calls on an OAuth-protected server (tests/authorizations/store_peer.py): every request goes
with the caller's token; a caller who must reconnect makes the round wait, answers kept, and
it is sent exactly once when the account is connected again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from mrtrweb.authorizations.models import Authorization
from mrtrweb.authorizations.signals import connected
from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.servers.models import Connection
from tests.authorizations.store_peer import OAuthPeer
from tests.authorizations.store_support import connect, oauth_connection, serve_peer
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

APPROVAL = {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops"]}


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Resubmissions and resumed sends run when their transaction commits."""


@pytest.fixture
def oauth_peer() -> Iterator[OAuthPeer]:
    yield from serve_peer()


@pytest.fixture
def ada() -> Any:
    return make_user("ada", first_name="Ada", last_name="Lovelace", email="ada@example.com")


@pytest.fixture
def bob() -> Any:
    return make_user("bob", email="bob@example.com")


def start(conn: Connection, user: Any, tool: str = "approve_deploy") -> Call:
    return engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target=tool,
        arguments={"service": "api"},
        user=user,
    )


def tool_calls(peer: OAuthPeer) -> list[str | None]:
    """Whose token each tools/call carried, in order (None: no live token)."""
    return [who for who, method, _ in peer.authority.seen if method == "tools/call"]


def answer(round: Round, user: Any) -> Round:
    return engine.answer(round, {"approval": {"action": "accept", "content": APPROVAL}}, user)


def test_a_round_answered_by_someone_else_goes_with_the_callers_token(
    oauth_peer: OAuthPeer, ada: Any, bob: Any
) -> None:
    conn = oauth_connection(oauth_peer)
    connect(conn, ada, oauth_peer)
    connect(conn, bob, oauth_peer)
    call = start(conn, ada)
    assert call.status == Call.Status.WAITING, call.error
    answer(call.rounds.get(), bob)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert tool_calls(oauth_peer) == ["ada", "ada"]


def test_the_callers_token_is_refreshed_for_a_resubmission(
    oauth_peer: OAuthPeer, ada: Any, bob: Any
) -> None:
    conn = oauth_connection(oauth_peer)
    connect(conn, ada, oauth_peer)
    connect(conn, bob, oauth_peer)
    call = start(conn, ada)
    oauth_peer.authority.expire_access_tokens()  # ada's token died while bob was answering
    answer(call.rounds.get(), bob)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert tool_calls(oauth_peer) == ["ada", None, "ada"]
    assert oauth_peer.authority.refreshes() == ["refresh"]
    assert Authorization.objects.get(user=bob).last_refresh_at is None  # never the answerer's


def test_a_revoked_grant_parks_the_round_until_the_caller_reconnects(
    oauth_peer: OAuthPeer, ada: Any, bob: Any
) -> None:
    conn = oauth_connection(oauth_peer, title="Guarded server")
    connect(conn, ada, oauth_peer)
    connect(conn, bob, oauth_peer)
    call = start(conn, ada)
    round = call.rounds.get()
    oauth_peer.authority.revoke("ada")
    oauth_peer.authority.expire_access_tokens()
    mail.outbox.clear()

    round = answer(round, bob)
    call.refresh_from_db()
    # Nothing lost: the answers wait, as answered, to be sent.
    assert round.status == Round.Status.SUBMITTED
    assert round.answers == {"approval": {"action": "accept", "content": APPROVAL}}
    assert round.answered_by == bob
    assert round.attempts == 0  # waiting for a person is no failed attempt
    assert call.status == Call.Status.WAITING
    assert call.waiting_for_authorization_since is not None
    assert "Ada Lovelace must reconnect their account on Guarded server" in (
        call.waiting_for_authorization_reason
    )
    assert Authorization.objects.get(user=ada).status == Authorization.Status.RECONNECT
    event = Event.objects.get(call=call, kind="waiting_for_authorization")
    assert event.round == round and "sekret" not in str(event.detail)
    # The caller (only) is told, with the way back.
    assert [m.to for m in mail.outbox] == [["ada@example.com"]]
    assert "Reconnect your account" in mail.outbox[0].subject
    assert f"/calls/{call.pk}/" in mail.outbox[0].body
    assert "sekret" not in mail.outbox[0].body
    assert tool_calls(oauth_peer) == ["ada", None]

    # The sweep leaves it alone: it is not stranded, and not failed for waiting.
    later = timezone.now() + timedelta(minutes=5)
    assert engine.sweep(now=later)["requeued"] == 0
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED

    # Ada connects again: the round is sent, once, with her new token.
    connect(conn, ada, oauth_peer, signal=True)
    connected.send(sender=Authorization, connection=conn, user=ada)  # a second signal: no-op
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.waiting_for_authorization_since is None
    assert tool_calls(oauth_peer) == ["ada", None, "ada"]
    assert Event.objects.filter(call=call, kind="authorization_resumed").count() == 1
    assert round.attempts == 1


def test_someone_elses_connection_resumes_nothing(
    oauth_peer: OAuthPeer, ada: Any, bob: Any
) -> None:
    conn = oauth_connection(oauth_peer)
    call = start(conn, ada, "echo")  # ada never connected: the first request waits
    call.refresh_from_db()
    assert call.status == Call.Status.RUNNING
    assert call.sent_at is None and call.waiting_for_authorization_since is not None
    assert "has not connected their account" in call.waiting_for_authorization_reason
    # The watchdog does not take it for a dead sender.
    assert not engine.check_call(call.pk, now=timezone.now() + timedelta(days=1))
    connect(conn, bob, oauth_peer, signal=True)
    call.refresh_from_db()
    assert call.waiting_for_authorization_since is not None
    assert tool_calls(oauth_peer) == [None]
    connect(conn, ada, oauth_peer, signal=True)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert tool_calls(oauth_peer) == [None, "ada"]


def test_a_shared_account_resumes_every_call_waiting_on_it(
    oauth_peer: OAuthPeer, ada: Any, bob: Any
) -> None:
    conn = oauth_connection(oauth_peer, Connection.Auth.OAUTH_SHARED)
    calls = [start(conn, ada, "echo"), start(conn, bob, "echo")]
    for call in calls:
        call.refresh_from_db()
        assert call.waiting_for_authorization_since is not None
    assert mail.outbox == []  # no caller can fix a shared account: operators see it
    connect(conn, None, oauth_peer, signal=True)
    for call in calls:
        call.refresh_from_db()
        assert call.status == Call.Status.COMPLETED, call.error
    assert tool_calls(oauth_peer) == [None, None, "shared", "shared"]


def test_a_waiting_round_still_expires_with_its_state(
    oauth_peer: OAuthPeer, ada: Any, bob: Any
) -> None:
    conn = oauth_connection(oauth_peer)
    connect(conn, ada, oauth_peer)
    call = start(conn, ada)
    round = call.rounds.get()
    oauth_peer.authority.revoke("ada")
    oauth_peer.authority.expire_access_tokens()
    answer(round, bob)
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED
    # Before its state expires: kept. After: the normal expiry, saying why.
    assert engine.sweep(now=round.expires_at - timedelta(seconds=1))["expired"] == 0
    assert engine.sweep(now=round.expires_at + timedelta(seconds=1))["expired"] == 1
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.EXPIRED
    assert call.status == Call.Status.EXPIRED
    assert "while it waited for an account to be reconnected" in call.error
    assert round.answers  # kept
    # Connecting afterwards sends nothing.
    connect(conn, ada, oauth_peer, signal=True)
    assert tool_calls(oauth_peer) == ["ada", None]


def test_a_static_header_refused_still_fails(oauth_peer: OAuthPeer, ada: Any) -> None:
    conn = oauth_connection(oauth_peer, Connection.Auth.HEADER, bearer_token="at-sekret-not-issued")
    call = start(conn, ada, "echo")
    assert call.status == Call.Status.FAILED
    assert call.waiting_for_authorization_since is None


def test_the_pages_say_who_must_reconnect(oauth_peer: OAuthPeer, ada: Any, bob: Any) -> None:
    conn = oauth_connection(oauth_peer, title="Guarded server")
    connect(conn, ada, oauth_peer)
    connect(conn, bob, oauth_peer)
    call = start(conn, ada)
    round = call.rounds.get()
    oauth_peer.authority.revoke("ada")
    oauth_peer.authority.expire_access_tokens()
    answer(round, bob)
    headline = "Waiting for Ada Lovelace to reconnect their account on Guarded server"
    as_ada, as_bob = Client(), Client()
    as_ada.force_login(ada)
    as_bob.force_login(bob)
    for url in (call.get_absolute_url(), round.get_absolute_url()):
        mine = as_ada.get(url).content.decode()
        assert headline in mine
        assert "Reconnect your account" in mine
        assert f"next={call.get_absolute_url().replace('/', '%2F')}" in mine or (
            f'href="{call.get_absolute_url()}"' in mine
        )
        theirs = as_bob.get(url)
        if theirs.status_code == 200:  # bob answered the round: he may see it
            text = theirs.content.decode()
            assert headline in text
            assert "Reconnect your account" not in text
