"""Starting a call: create it (one transaction), then send its first request, once."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, Required, TypedDict, Unpack

from django.contrib.auth.models import Group, User
from django.db import OperationalError, transaction
from django.utils import timezone

from mrtrweb.mcp import io_loop
from mrtrweb.policies.resolve import policy_for
from mrtrweb.policies.snapshot import PolicySnapshot
from mrtrweb.servers.models import Connection

from .. import handoff, queue
from ..models import Call
from .exchange import run
from .handshake_calls import converse
from .reads import call_as_now, call_to_send
from .trail import announce, dump
from .transitions import transition_call, watch_grace

__all__ = [
    "NothingStarted",
    "StartRequest",
    "create_call",
    "restart",
    "run_call",
    "send_call",
    "start_call",
]


class NothingStarted(Exception):
    """The database refused the call's transaction (SQLite's lock wait ran out, say): nothing
    was stored, so the very same start may be made again."""


class StartRequest(TypedDict, total=False):
    """What starts a call: the keyword arguments of :func:`create_call` and
    :func:`start_call`."""

    connection: Required[Connection]
    method: Required[str]
    target: Required[str]
    # A mapping, or JSON text sent exactly as given (a restart resends the first bytes).
    arguments: Required[Mapping[str, Any] | str | None]
    user: Required[User]
    restarted_from: Call | None
    # Sends its rounds to that person or group (at most one) instead of following the
    # connection's routing policy.
    route_user: User | None
    route_group: Group | None
    # Writes what belongs with the call in its transaction (a webhook subscription, the
    # idempotency key of the request that started it).
    with_call: Callable[[Call], None] | None
    # The approval policy, when the starter gives one (the API's ``policy``); else the
    # tool's and the connection's (mrtrweb.policies.resolve.policy_for).
    policy: PolicySnapshot | None


def create_call(**start: Unpack[StartRequest]) -> Call:
    """Create a call, not sent yet (:func:`run_call` sends it).

    The call, its ``started`` entry and whatever ``with_call(call)`` writes are one
    transaction: all of them are stored, or, when ``with_call`` raises or the database
    refuses, none. On SQLite the transaction takes the write lock first and waits for it
    (``BEGIN IMMEDIATE`` and the lock timeout in settings), so a busy database is waited for
    rather than half-written.
    """
    connection, method, target = start["connection"], start["method"], start["target"]
    restarted_from = start.get("restarted_from")
    route_user, route_group = start.get("route_user"), start.get("route_group")
    with_call = start.get("with_call")
    if route_user is not None and route_group is not None:
        raise ValueError("route a call to a user or to a group, not both")
    arguments = start["arguments"]
    if isinstance(arguments, str):
        arguments_json = arguments
        parsed = json.loads(arguments_json)
        if not isinstance(parsed, dict):
            raise ValueError("arguments must be a JSON object")
    else:
        arguments_json = json.dumps(dict(arguments or {}), ensure_ascii=False)
    tool = connection.tool(target) if method == Call.Method.TOOL else None
    policy = start.get("policy")
    if policy is None:
        policy = policy_for(connection, target if method == Call.Method.TOOL else None)
    credentials = connection.credentials()
    if not credentials.get("bearer_token") and not credentials.get("headers"):
        # Nothing to send: {} (stored as is, not encrypted), which still means "these, none",
        # unlike None ("the connection's current ones").
        credentials = {}
    with transaction.atomic():
        call = Call(
            connection=connection,
            method=method,
            target=target,
            arguments_json=arguments_json,
            tool=Call.tool_for_rounds(dump(tool)) if tool else None,
            credentials=credentials,
            started_by=start["user"],
            restarted_from=restarted_from,
            route_user=route_user,
            route_group=route_group,
            policy=policy.to_json(),
        )
        # Sent at once by whoever starts it; should that process die first, the scheduler
        # sends it a moment later.
        call.watch_at = call.created_at + handoff.GRACE
        call.save(force_insert=True)
        # Announced like every event, not stored as one: the call row holds all of it, and
        # the trail shows the start from there (calls.presenting.history).
        restart: dict[str, Any] = {"restarted_from": restarted_from.pk} if restarted_from else {}
        announce(call, "started", method=method, target=target, **restart)
        if with_call is not None:
            with_call(call)
    return call


def run_call(call: Call) -> Call:
    """Send a call :func:`create_call` made; returns it completed, waiting on a round, or
    failed (as its send stored it when that settled it, else read)."""
    return send_call(call.pk) or call_as_now(call.pk)


def send_call(call_id: int) -> Call | None:
    """Send a call's first request, once: only the caller that claims it (sets ``sent_at``)
    sends. A call claimed by a process that died while sending is failed by its watchdog.

    Returns when the call is completed, failed, or waiting on a round; on a handshake-era
    server the call's conversation goes on after that in this process (it owns the stream).
    What it returns is the call as stored when its request completed it or parked its first
    round here (``exchange.Exchanged``); None when anything else happened: read it then."""
    # The claim sets when the watchdog first looks (one commit): should this process die (or
    # hang) before the call settles, the watchdog fails it; its clock (updated_at) starts with
    # the claim, just before the request leaves.
    with transaction.atomic():
        now = timezone.now()
        if not transition_call(
            call_id,
            Call.Status.RUNNING,
            Call.Status.RUNNING,
            # Not while it waits for an account: the resume clears that, then sends it.
            where={"sent_at__isnull": True, "waiting_for_authorization_since__isnull": True},
            sent_at=now,
            updated_at=now,
            watch_at=now + watch_grace(),
        ):
            return None
        call = call_to_send(call_id)
        modern = call.connection.era != Connection.Era.LEGACY
    if modern:
        with io_loop.attached():
            exchanged = run(call, round=None, responses=None, state=None)
        if not exchanged.legacy:
            return exchanged.call
    # A handshake-era server (known, or found out now: it refused the 2026-07-28 request, so
    # nothing ran): the call's conversation runs on the shared loop, and this returns once a
    # question is parked or the call is done, not after the person answered.
    converse(call)
    return None


def start_call(*, deliver_within: float | None = None, **start: Unpack[StartRequest]) -> Call:
    """Create a call and send it (:func:`create_call`, then :func:`send_call`).

    Without ``deliver_within`` the request is sent here, and the call comes back completed,
    waiting on a round, or failed. With it (seconds), the request goes out on a delivery
    thread of this process (:mod:`..handoff`) once the call is committed, and this waits up
    to that long: a quick server's first round or result is there when it returns, a slow
    one's call is still running, and the person watches it on the call page instead of a
    page that hangs. The scheduler (``Call.watch_at``, :mod:`.due`) sends it
    should this process die before sending (:func:`send_call` lets only one sender send).
    With ``MRTRWEB_DELIVER_ON_ANSWER`` off, a ``send_call`` task due at once is written
    instead, and a worker sends it.
    """
    hand_off = deliver_within is not None and handoff.enabled()
    sending: list[Future[Call | None]] = []
    with_call = start.get("with_call")

    def and_then(call: Call) -> None:
        if with_call is not None:
            with_call(call)
        if hand_off:
            transaction.on_commit(lambda: sending.append(handoff.start(send_call, call.pk)))
        elif deliver_within is not None:
            # Not sent by this process (MRTRWEB_DELIVER_ON_ANSWER off): a worker sends it.
            queue.enqueue("send_call", call.pk)

    try:
        made: StartRequest = {**start, "with_call": and_then}
        call = create_call(**made)
    except OperationalError as exc:
        # Only the one transaction ran, and it rolled back: no call, no task, nothing sent.
        raise NothingStarted(str(exc)) from exc
    if deliver_within is None:
        return run_call(call)
    # The call as its send stored it, when that settled it while this waited (not read again).
    sent = handoff.outcome(sending[0], deliver_within) if sending else None
    return sent or call_as_now(call.pk)


def restart(call: Call, user: User, *, deliver_within: float | None = None) -> Call:
    """Start the same call again (same arguments, exactly), e.g. after its state expired.

    Its policy is today's, as a fresh start of the same tool by ``user`` would get it
    (``policy_for``), never the one stored on ``call``: a policy an operator gave one call
    through the API applies to that call only, and a policy edited since is what holds now.
    """
    return start_call(
        deliver_within=deliver_within,
        connection=call.connection,
        method=call.method,
        target=call.target,
        arguments=call.arguments_json,
        user=user,
        restarted_from=call,
        route_user=call.route_user,
        route_group=call.route_group,
    )
