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

from mrtrweb.authorizations.credentials import DatabaseAuthenticator
from mrtrweb.authorizations.models import Authorization
from mrtrweb.authorizations.signals import connected
from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.servers.models import Connection
from tests.authorizations.store_peer import CLIENT_ID, CLIENT_SECRET, OAuthPeer
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
    assert engine.run_due(now=later)["requeued"] == 0
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
    connect(conn, None, oauth_peer)
    # Whoever connected it (here: ada, as an operator would), every call waiting goes on.
    connected.send(sender=Authorization, connection=conn, user=ada)
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
    assert engine.run_due(now=round.expires_at - timedelta(seconds=1))["expired"] == 0
    assert engine.run_due(now=round.expires_at + timedelta(seconds=1))["expired"] == 1
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
    assert "waiting for a reconnect" in as_ada.get("/calls/").content.decode()
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


def test_a_token_refused_even_after_renewal_asks_to_reconnect(
    oauth_peer: OAuthPeer, ada: Any
) -> None:
    conn = oauth_connection(oauth_peer)
    connect(conn, ada, oauth_peer)
    oauth_peer.authority.refused_subjects.add("ada")
    call = start(conn, ada, "echo")
    call.refresh_from_db()
    # Refused, renewed once, refused again: no loop, and only a new connection can help.
    assert tool_calls(oauth_peer) == [None, None]
    assert oauth_peer.authority.refreshes() == ["refresh"]
    assert call.waiting_for_authorization_since is not None
    assert "the server refused the token" in call.waiting_for_authorization_reason
    assert Authorization.objects.get(user=ada).status == Authorization.Status.RECONNECT
    oauth_peer.authority.refused_subjects.clear()
    connect(conn, ada, oauth_peer, signal=True)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error


def test_client_credentials_calls_need_nobody(oauth_peer: OAuthPeer, ada: Any, bob: Any) -> None:
    conn = oauth_connection(
        oauth_peer,
        Connection.Auth.CLIENT_CREDENTIALS,
        oauth_client_id=CLIENT_ID,
        oauth_client_secret=CLIENT_SECRET,
    )
    call = start(conn, ada)
    answer(call.rounds.get(), bob)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert tool_calls(oauth_peer) == ["machine", "machine"]
    assert oauth_peer.authority.refreshes() == ["client_credentials"]


def test_refused_client_credentials_fail_instead_of_waiting(
    oauth_peer: OAuthPeer, ada: Any
) -> None:
    conn = oauth_connection(
        oauth_peer,
        Connection.Auth.CLIENT_CREDENTIALS,
        oauth_client_id=CLIENT_ID,
        oauth_client_secret="cs-sekret-wrong",
    )
    call = start(conn, ada, "echo")
    assert call.status == Call.Status.FAILED
    assert "invalid_client" in call.error and "sekret" not in call.error
    assert call.waiting_for_authorization_since is None
    assert mail.outbox == []


def test_a_reconnect_during_the_refusal_is_not_missed(
    oauth_peer: OAuthPeer, ada: Any, bob: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The account is connected again (and ``connected`` sent, finding nothing waiting) after
    the server refused the request but before the wait was recorded: the round still goes."""
    conn = oauth_connection(oauth_peer)
    connect(conn, ada, oauth_peer)
    call = start(conn, ada)
    oauth_peer.authority.revoke("ada")
    oauth_peer.authority.expire_access_tokens()
    refused = DatabaseAuthenticator.refused

    def refused_then_reconnected(self: DatabaseAuthenticator, exc: Any) -> str:
        reason = refused(self, exc)
        connect(conn, ada, oauth_peer, signal=True)
        return reason

    monkeypatch.setattr(DatabaseAuthenticator, "refused", refused_then_reconnected)
    round = answer(call.rounds.get(), bob)
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.waiting_for_authorization_since is None
    assert tool_calls(oauth_peer) == ["ada", None, "ada"]


def test_an_unreachable_token_endpoint_is_a_delivery_to_retry_not_a_reconnect(
    oauth_peer: OAuthPeer, ada: Any, bob: Any, settings: Any
) -> None:
    # Retries wait in the database queue for their time (not run at once, inline).
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    conn = oauth_connection(oauth_peer)
    connect(conn, ada, oauth_peer)
    call = start(conn, ada)
    oauth_peer.authority.expire_access_tokens()
    oauth_peer.authority.token_endpoint_down = True
    round = answer(call.rounds.get(), bob)
    engine.resubmit(round.pk)  # what the queued task does
    round.refresh_from_db()
    call.refresh_from_db()
    # Nothing the person can do: the answers wait for an automatic retry.
    assert round.status == Round.Status.SUBMITTED
    assert round.next_attempt_at is not None and round.attempts == 1
    assert "could not be renewed" in round.delivery_error
    assert call.waiting_for_authorization_since is None
    assert Authorization.objects.get(user=ada).status == Authorization.Status.ACTIVE
    assert oauth_peer.authority.refreshes() == ["down"]
    assert not [m for m in mail.outbox if "Reconnect" in m.subject]
    # Back up: the retry refreshes and delivers.
    oauth_peer.authority.token_endpoint_down = False
    engine.resubmit(round.pk)
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert call.status == Call.Status.COMPLETED, call.error
    assert tool_calls(oauth_peer) == ["ada", None, None, "ada"]
