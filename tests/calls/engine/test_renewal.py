"""The renewal policy: rounds that outlive the server's state.

Real peers, no mocks: the fastmcp peer (in this process) and the official SDK's (a
subprocess), both with ``--extra-tools renewal`` (tests/peers/_renewal_tools.py) and a state
lifetime of one second, which the connection knows too. The server's state really dies: each
test waits for it (a second or two), then runs what the expiry task runs. Deadlines of days
(the person's) are reached with the engine's clock (``now=``) or time-machine, not by waiting.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import engine
from mrtrweb.calls.engine.renewal_policy import asks_consent, same_questions, what_changed
from mrtrweb.calls.models import Call, Round
from mrtrweb.calls.presenting.rounds import RenewalState, renewal_state
from mrtrweb.people.roles import ADMINS
from mrtrweb.policies.models import Policy
from mrtrweb.policies.snapshot import PolicySnapshot
from mrtrweb.servers.catalog import refresh_catalog
from tests.calls.engine.delivery_support import DATABASE_QUEUE, kinds, run_tasks, run_until
from tests.calls.engine.reminders_support import start as park_confirm
from tests.peers.fixtures import running_peer
from tests.peers.inprocess import InProcessPeer, in_process_peer
from tests.support.factories import make_connection, make_user

pytestmark = pytest.mark.django_db(transaction=True)

LIFETIME = 1.0  # seconds: the peers' --state-ttl and the connections' state_lifetime
PEER_ARGS = ("--state-ttl", "1", "--extra-tools", "renewal")


@pytest.fixture(autouse=True)
def _database_queue(settings: Any) -> None:
    settings.TASKS = DATABASE_QUEUE


@pytest.fixture(scope="module")
def fastmcp_renewal() -> Iterator[Any]:
    with in_process_peer("fastmcp_server", *PEER_ARGS) as peer:
        yield peer


@pytest.fixture(scope="module")
def sdk_renewal() -> Iterator[Any]:
    with running_peer("sdk_server", "--json-response", *PEER_ARGS) as peer:
        yield peer


@pytest.fixture(params=["fastmcp", "sdk"])
def peer(request: Any) -> Any:
    return request.getfixturevalue(f"{request.param}_renewal")


def keys(peer: Any) -> tuple[str, str]:
    """The reviewer's and the verdict's keys at this peer."""
    if not isinstance(peer, InProcessPeer):  # the SDK's: keys named after the resolvers
        return (
            "tests.peers._renewal_tools:ask_reviewer",
            "tests.peers._renewal_tools:ask_verdict",
        )
    return "reviewer", "verdict"


def connect(peer: Any, name: str, **policy: Any) -> Any:
    connection = make_connection(
        peer, name=name, state_lifetime=timedelta(seconds=LIFETIME), auth="header"
    )
    refresh_catalog(connection)
    if policy:
        Policy.objects.create(connection=connection, **policy)
    return connection


def start(connection: Any, user: Any, tool: str, order: str) -> Call:
    call = engine.start_call(
        connection=connection,
        method=Call.Method.TOOL,
        target=tool,
        arguments=f'{{"order": "{order}"}}',  # the exact text, resent by every renewal
        user=user,
    )
    assert call.status == Call.Status.WAITING, call.error
    return call


def accept(round: Round, user: Any, **content: Any) -> None:
    (key,) = round.input_requests
    engine.answer(round, {key: {"action": "accept", "content": content}}, user)


def verdict_round(connection: Any, user: Any, tool: str, order: str) -> Round:
    """A call of ``tool`` whose first round (who reviews) is answered and delivered: the
    second (the verdict) waits."""
    call = start(connection, user, tool, order)
    first = call.rounds.get()
    accept(first, user, name="Bo")
    assert run_until(first, Round.Status.DELIVERED).status == Round.Status.DELIVERED
    return call.rounds.get(index=2)


def outlive_state(round: Round) -> None:
    """Wait until the server's state of ``round`` is dead (its deadline, and a margin for
    servers that count whole seconds)."""
    round.refresh_from_db()
    left = (round.expires_at - timezone.now()).total_seconds() + 1.1
    time.sleep(max(left, 0.0))


def expiry_runs(round: Round, now: datetime | None = None) -> bool:
    """What the expiry task does for ``round``, then the tasks it queued."""
    expired = engine.expire_if_due(round.pk, now=now)
    run_tasks()
    round.refresh_from_db()
    return expired


def params(entry: dict[str, Any]) -> dict[str, Any]:
    return (entry["json"] or {}).get("params") or {}


def calls_of(peer: Any, since: int, tool: str) -> list[dict[str, Any]]:
    return [
        e
        for e in peer.recorded(since)
        if (e["json"] or {}).get("method") == "tools/call" and params(e).get("name") == tool
    ]


def test_a_renewed_round_answered_after_three_lifetimes_is_resubmitted_once(
    peer: Any, user: Any
) -> None:
    reviewer_key, verdict_key = keys(peer)
    connection = connect(peer, "renew-three", renew_expired=True)
    round = verdict_round(connection, user, "review_order", "A-1")
    assert round.renew_until is not None
    # The person's deadline is the policy's (seven days), not the server's second.
    assert round.answer_by == round.renew_until
    assert round.renew_until - round.created_at == timedelta(days=7)
    mark = peer.mark()
    for lifetime in range(1, 4):
        outlive_state(round)
        assert expiry_runs(round) is False  # renewed, not expired
        assert round.status == Round.Status.PENDING
        assert round.renewals == lifetime
        assert round.expires_at > timezone.now()
        # Nothing queued for later: the fresh state's deadline is the round's due time.
        assert not DBTaskResult.objects.filter(status="READY").exists()
    accept(round, user, ok=True)
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED
    call = round.call
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"][0]["text"] == "order A-1 reviewed by Bo: ok"
    sent = calls_of(peer, mark, "review_order")
    # Three renewals: each issued the call again (no state, the exact argument text) and
    # answered the reviewer's round again with the stored answer...
    reissued = [e for e in sent if "requestState" not in params(e)]
    assert len(reissued) == 3
    assert all(e["json"]["params"]["arguments"] == {"order": "A-1"} for e in reissued)
    replays = [e for e in sent if reviewer_key in (params(e).get("inputResponses") or {})]
    assert len(replays) == 3
    assert all(
        e["json"]["params"]["inputResponses"][reviewer_key]["content"] == {"name": "Bo"}
        for e in replays
    )
    # ...and the person's answer went once, to the final state.
    final = round.request_state
    to_final = [e for e in sent if params(e).get("requestState") == final]
    assert len(to_final) == 1
    assert params(to_final[0])["inputResponses"] == {
        verdict_key: {"action": "accept", "content": {"ok": True}}
    }
    assert len([e for e in sent if verdict_key in (params(e).get("inputResponses") or {})]) == 1
    trail = kinds(round)
    assert trail.count("renewed") == 3 and "expired" not in trail
    assert [e.detail["renewals"] for e in round.events.filter(kind="renewed")] == [1, 2, 3]
    assert renewal_state(round) == RenewalState(3, False)
    # The admins' list of rounds says so beside its status.
    admin = Client()
    admin.force_login(make_user("root", ADMINS))
    listing = admin.get(reverse("dashboard:rounds"), {"status": "all"})
    assert listing.status_code == 200
    assert "renewed 3 times" in listing.content.decode()
    audit = admin.get(reverse("dashboard:call_audit", kwargs={"pk": call.pk})).content.decode()
    assert audit.count("Renewed: the call ran again up to this round") == 3


def test_a_renewal_whose_questions_changed_asks_again(peer: Any, user: Any) -> None:
    _, verdict_key = keys(peer)
    connection = connect(peer, "renew-changed", renew_expired=True)
    round = verdict_round(connection, user, "review_order", "B-2")
    assert "at 10 EUR" in round.summary
    # While the person waits, the server's data changes: the same question reads otherwise.
    price = engine.start_call(
        connection=connection,
        method=Call.Method.TOOL,
        target="set_price",
        arguments={"order": "B-2", "price": "12 EUR"},
        user=user,
    )
    assert price.status == Call.Status.COMPLETED, price.error
    outlive_state(round)
    assert expiry_runs(round) is False
    assert round.status == Round.Status.CHANGED
    asked = round.call.rounds.get(status=Round.Status.PENDING)
    assert asked.replaces_id == round.pk
    assert asked.changes == [
        {
            "key": verdict_key,
            "change": "message",
            "message": "Does order B-2 at 12 EUR look right to you, Bo?",
            "was": "Does order B-2 at 10 EUR look right to you, Bo?",
        }
    ]
    assert "renewal_changed" in kinds(round)
    assert renewal_state(round) == RenewalState(0, True)
    # The person is told what changed, in words, and asked again.
    person = Client()
    person.force_login(user)
    page = person.get(asked.get_absolute_url())
    assert page.status_code == 200
    text = page.content.decode()
    assert "its questions changed since round 2 was asked" in text
    assert (
        "Now reads: Does order B-2 at 12 EUR look right to you, Bo? "
        "(was: Does order B-2 at 10 EUR look right to you, Bo?)"
    ) in text
    accept(asked, user, ok=False)
    asked = run_until(asked, Round.Status.DELIVERED)
    call = Call.objects.get(pk=round.call_id)
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"][0]["text"] == "order B-2 reviewed by Bo: not ok"


def test_an_answer_arriving_after_the_state_expired_is_delivered_by_verified_replay(
    peer: Any, user: Any
) -> None:
    reviewer_key, verdict_key = keys(peer)
    connection = connect(peer, "renew-late", renew_expired=True)
    round = verdict_round(connection, user, "review_order", "C-3")
    outlive_state(round)
    dead = round.request_state
    mark = peer.mark()
    # No expiry task ran: the answer meets the dead state first.
    accept(round, user, ok=True)
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED, round.delivery_error
    call = Call.objects.get(pk=round.call_id)
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"][0]["text"] == "order C-3 reviewed by Bo: ok"
    sent = calls_of(peer, mark, "review_order")
    # The answer to the dead state (refused), the call issued again, the reviewer's answer
    # replayed, and the answer once more: to the fresh state, once.
    assert [params(e).get("requestState") == dead for e in sent] == [True, False, False, False]
    assert "requestState" not in params(sent[1])
    assert list(params(sent[2])["inputResponses"]) == [reviewer_key]
    assert params(sent[3])["requestState"] == round.request_state != dead
    assert list(params(sent[3])["inputResponses"]) == [verdict_key]
    (renewed,) = round.events.filter(kind="renewed")
    assert renewed.detail["on_delivery"] is True and renewed.detail["replayed"] == 1
    assert "expired" not in kinds(round)


def test_a_tool_that_may_act_is_not_renewed_without_the_operators_say_so(
    peer: Any, user: Any
) -> None:
    connection = connect(peer, "renew-unsafe", renew_expired=True)
    call = start(connection, user, "count_order", "D-4")
    assert not engine.renewable(call)
    round = call.rounds.get()
    assert round.renew_until is None and round.answer_by == round.expires_at
    mark = peer.mark()
    outlive_state(round)
    assert expiry_runs(round) is True  # expires as it always did
    assert round.status == Round.Status.EXPIRED
    assert Call.objects.get(pk=call.pk).status == Call.Status.EXPIRED
    assert calls_of(peer, mark, "count_order") == []  # never issued again
    # An operator who accepts that it runs again up to its question allows it.
    call.policy = PolicySnapshot(renew_expired=True, renew_unsafe=True).to_json()
    assert engine.renewable(call)


def test_a_round_asking_consent_to_a_link_is_never_renewed(fastmcp_renewal: Any, user: Any) -> None:
    connection = connect(fastmcp_renewal, "renew-url", renew_expired=True, renew_unsafe=True)
    call = engine.start_call(
        connection=connection, method=Call.Method.TOOL, target="url_login", arguments={}, user=user
    )
    assert engine.renewable(call)  # the operator allowed it...
    round = call.rounds.get()
    assert round.renew_until is None and round.answer_by == round.expires_at
    outlive_state(round)
    # ...but a link's consent is given afresh by the person, never by a renewal.
    assert expiry_runs(round) is True
    assert round.status == Round.Status.EXPIRED


def test_the_persons_deadline_ends_renewals(fastmcp_renewal: Any, user: Any) -> None:
    connection = connect(fastmcp_renewal, "renew-deadline", renew_expired=True)
    call = start(connection, user, "review_order", "E-5")
    round = call.rounds.get()
    outlive_state(round)
    # A week later (the engine's clock): no renewal, the round expires.
    later = round.renew_until + timedelta(seconds=1)
    mark = fastmcp_renewal.mark()
    assert expiry_runs(round, now=later) is True
    assert round.status == Round.Status.EXPIRED
    assert calls_of(fastmcp_renewal, mark, "review_order") == []


def test_the_questions_compare_by_keys_kinds_schemas_and_messages() -> None:
    def form(message: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "method": "elicitation/create",
            "params": {"message": message, "requestedSchema": schema or {"type": "object"}},
        }

    def url(message: str, link: str) -> dict[str, Any]:
        params = {"mode": "url", "message": message, "url": link}
        return {"method": "elicitation/create", "params": params}

    old = {"a": form("A?"), "b": form("B?"), "c": url("Sign in", "https://x.example/1")}
    assert same_questions(old, dict(old))
    # A URL-mode link is minted afresh each time: not part of the question.
    assert same_questions(old, {**old, "c": url("Sign in", "https://x.example/2")})
    new = {
        "a": form("A!"),
        "b": form("B?", {"type": "object", "properties": {"n": {"type": "integer"}}}),
        "c": form("Sign in"),
        "d": form("D?"),
    }
    assert not same_questions(old, new)
    assert what_changed(old, new) == [
        {"key": "a", "change": "message", "message": "A!", "was": "A?"},
        {"key": "b", "change": "schema", "message": "B?", "was": "B?"},
        {"key": "c", "change": "kind", "message": "Sign in", "was": "Sign in"},
        {"key": "d", "change": "added", "message": "D?"},
    ]
    assert asks_consent(old) and not asks_consent(new)
    removed = {"key": "d", "change": "removed", "was": "D?"}
    assert what_changed(new, {"a": form("A!")})[-1] == removed


def test_a_late_answer_to_changed_questions_is_kept_and_not_sent(
    fastmcp_renewal: Any, user: Any
) -> None:
    connection = connect(fastmcp_renewal, "renew-late-changed", renew_expired=True)
    round = verdict_round(connection, user, "review_order", "F-6")
    engine.start_call(
        connection=connection,
        method=Call.Method.TOOL,
        target="set_price",
        arguments={"order": "F-6", "price": "99 EUR"},
        user=user,
    )
    outlive_state(round)
    mark = fastmcp_renewal.mark()
    accept(round, user, ok=True)
    round = run_until(round, Round.Status.CHANGED)
    assert round.status == Round.Status.CHANGED
    assert round.answers == {"verdict": {"action": "accept", "content": {"ok": True}}}
    asked = round.call.rounds.get(status=Round.Status.PENDING)
    assert "at 99 EUR" in asked.summary
    # The answer went only to the dead state (refused there); never to a question it was not
    # given for.
    sent = calls_of(fastmcp_renewal, mark, "review_order")
    with_verdict = [e for e in sent if "verdict" in (params(e).get("inputResponses") or {})]
    assert len(with_verdict) == 1 and params(with_verdict[0])["requestState"] != asked.request_state
    person = Client()
    person.force_login(user)
    text = person.get(asked.get_absolute_url()).content.decode()
    assert "What was answered before (not sent):" in text
    assert "&quot;ok&quot;: true" in text or '"ok": true' in text


def test_a_round_without_state_is_kept_until_the_deadline_it_shows(
    fastmcp_renewal: Any, user: Any, time_machine: Any
) -> None:
    connection = connect(fastmcp_renewal, "renew-stateless", renew_expired=True, renew_unsafe=True)

    round = park_confirm(connection, user)
    assert not round.has_request_state
    # Shown: the policy's week. Real: the same, since no server state can end sooner.
    assert round.answer_by == round.renew_until == round.created_at + timedelta(days=7)
    assert round.expires_at == round.answer_by
    # Three days on, the expiry task and the sweep leave it waiting, and its page says it is
    # due then, not that it was.
    time_machine.move_to(round.created_at + timedelta(days=3))
    assert expiry_runs(round) is False
    assert engine.run_due()["expired"] == 0
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING
    person = Client()
    person.force_login(user)
    text = person.get(round.get_absolute_url()).content.decode()
    assert "Due " in text and "Was due" not in text
    # Answered then, it is sent and the call completes.
    accept(round, user, ok=True)
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED, round.delivery_error
    call = Call.objects.get(pk=round.call_id)
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["structuredContent"]["confirmed"] is True
    # Past the deadline it showed, an unanswered one expires as any round does.
    late = park_confirm(connection, user)
    assert expiry_runs(late, now=late.answer_by - timedelta(seconds=1)) is False
    assert expiry_runs(late, now=late.answer_by) is True
    assert late.status == Round.Status.EXPIRED


def test_a_deadline_shorter_than_the_state_is_when_the_round_expires(
    fastmcp_renewal: Any, user: Any
) -> None:
    # The server would keep the state for an hour; the policy gives the person half of it.
    connection = make_connection(
        fastmcp_renewal, name="renew-short", state_lifetime=timedelta(hours=1), auth="header"
    )
    refresh_catalog(connection)
    Policy.objects.create(
        connection=connection, renew_expired=True, renew_for=timedelta(minutes=30)
    )
    round = start(connection, user, "review_order", "G-7").rounds.get()
    assert round.answer_by == round.renew_until == round.created_at + timedelta(minutes=30)
    assert round.expires_at == round.answer_by
    assert expiry_runs(round, now=round.answer_by - timedelta(seconds=1)) is False
    assert round.status == Round.Status.PENDING
    assert expiry_runs(round, now=round.answer_by) is True
    assert round.status == Round.Status.EXPIRED
