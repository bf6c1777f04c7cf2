"""Renewing a round whose server state died: the call issued again, verified, and the round
moved onto the fresh state (the renewal policy; who is renewed is :mod:`.renewal_policy`'s say).

The call's first request goes out again with the exact argument text (``Call.arguments_json``),
as a new request with no state. Whatever the server asks on the way is compared with what it
asked before: a round the call already answered (delivered) is answered again with the very
same stored answers, but only when the server asks exactly the same questions (same keys,
kinds, schemas and messages); the round that waits is found again when the server asks its
questions unchanged, and then only its ``requestState`` is replaced. Anything else stops the
replay: the questions changed, so the waiting round is marked ``changed`` and a new round
asks the person again, saying what changed; their earlier answers stay on the old round.

Two paths come here. A pending round past its state deadline (the expiry task claimed it,
:func:`.renewal_policy.claim`, and ``tasks.renew_round`` runs :func:`renew_parked`), and an answer
whose delivery the server refused for an expired state (``engine.exchange`` calls
:func:`renew_answered` in the same attempt, then sends the answers once, to the fresh state).

The network is the caller's: ``send(input_responses, request_state)`` sends the call's request
and returns the server's result (``engine.exchange`` builds it), so this module sits below the
exchange. Nothing here runs inside a transaction while it waits for the server.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import mcp_types
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from mrtrweb.mcp import MCPError, NotDelivered
from mrtrweb.mcp.rounds import state_only_backoff

from ..models import Call, Round, state_sha256
from .expiry import expire
from .outcomes import complete
from .parking import park
from .renewal_policy import asks_consent, renewable, same_questions, what_changed
from .renewal_policy import expires_at as renewal_expires_at
from .trail import dump, record
from .transitions import AlreadyAnswered, this_attempt, transition

__all__ = ["Renewal", "RenewalFailed", "renew_answered", "renew_parked", "replay"]

logger = logging.getLogger(__name__)

# Sends the call's request again: (inputResponses or None, requestState or None) -> result.
Send = Callable[[Mapping[str, Any] | None, str | None], Any]


class RenewalFailed(Exception):
    """The call issued again did not lead back to a round (too many rounds, say)."""


@dataclasses.dataclass(frozen=True)
class Renewal:
    """What issuing the call again came to.

    ``renewed``: the server asks the waiting round's questions again, under ``state``;
    ``changed``: it asks ``requests`` instead (``changes`` says how they differ from what was
    expected); ``completed``: it finished without asking (``result``). ``replayed`` counts the
    earlier rounds answered again on the way.
    """

    kind: str
    state: str | None = None
    requests: dict[str, Any] = dataclasses.field(default_factory=dict)
    changes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    replayed: int = 0
    result: Any = None


def replay(call: Call, round: Round, send: Send) -> Renewal:
    """Issue ``call`` again and walk the server back to ``round`` (see the module's text)."""
    # The rounds answered before this one, in order: what the server may ask again first.
    earlier = list(
        call.rounds.filter(index__lt=round.index, status=Round.Status.DELIVERED)
        .exclude(answers=None)
        .order_by("index")
    )
    responses: Mapping[str, Any] | None = None
    state: str | None = None
    replayed = 0
    waits = state_only_backoff()
    # Every request counts against the connection's cap, as the call's own rounds do.
    for _ in range(max(int(call.connection.max_rounds), 1) + 1):
        result = send(responses, state)
        if not isinstance(result, mcp_types.InputRequiredResult):
            return Renewal("completed", result=result, replayed=replayed)
        if not result.input_requests:
            # A state-only round: the server is busy or polling; retry with its state.
            time.sleep(next(waits))
            responses, state = None, result.request_state
            continue
        requests = {key: dump(request) for key, request in result.input_requests.items()}
        if same_questions(round.input_requests, requests):
            return Renewal("renewed", state=result.request_state, replayed=replayed)
        match = next(
            (
                r
                for r in earlier
                if same_questions(r.input_requests, requests) and not asks_consent(r.input_requests)
            ),
            None,
        )
        if match is None:
            expected = earlier[0] if earlier else round
            return Renewal(
                "changed",
                state=result.request_state,
                requests=requests,
                changes=what_changed(expected.input_requests, requests),
                replayed=replayed,
            )
        # Asked again exactly as before: answered again exactly as before.
        earlier = earlier[earlier.index(match) + 1 :]
        responses, state = match.answers, result.request_state
        replayed += 1
    raise RenewalFailed(f"the server asked more than {call.connection.max_rounds} rounds again")


def _wanted(call: Call, round: Round) -> bool:
    return (
        round.renew_until is not None
        and round.renew_until > timezone.now()
        and round.has_request_state
        and not asks_consent(round.input_requests)
        and renewable(call)
    )


def _move(
    call: Call,
    round: Round,
    status: str,
    where: dict[str, Any],
    renewal: Renewal,
    *,
    on_delivery: bool,
) -> bool:
    """Put ``round`` onto the fresh state (still ``status``), count it and say so."""
    with transaction.atomic():
        now = timezone.now()
        expires_at = renewal_expires_at(
            now + call.connection.state_lifetime, round.renew_until, renewal.state is not None
        )
        if not transition(
            round,
            status,
            status,
            where=where,
            request_state=renewal.state,
            has_request_state=renewal.state is not None,
            renewals=F("renewals") + 1,
            expires_at=expires_at,
        ):
            return False
        round.refresh_from_db(fields=["renewals", "expires_at"])
        round.set_request_state(renewal.state)
        record(
            call,
            "renewed",
            round=round,
            renewals=round.renewals,
            replayed=renewal.replayed,
            on_delivery=on_delivery,
            request_state_sha256=round.request_state_sha256,
            expires_at=expires_at.isoformat(),
        )
    return True


def _settle_otherwise(
    call: Call, round: Round, status: str, where: dict[str, Any], renewal: Renewal
) -> bool:
    """The questions changed, or the call finished without asking: ``round`` is marked
    ``changed``; a new round asks the person again (their earlier answers stay on this
    one), or the call completes."""
    with transaction.atomic():
        if not transition(round, status, Round.Status.CHANGED, where=where):
            return False
        if renewal.kind == "completed":
            record(call, "renewal_completed", round=round, replayed=renewal.replayed)
            complete(call, renewal.result)
            return True
        record(
            call,
            "renewal_changed",
            round=round,
            changes=renewal.changes,
            replayed=renewal.replayed,
            request_state_sha256=state_sha256(renewal.state),
        )
        asked = park(call, renewal.requests, renewal.state)
        pending = Round.Status.PENDING
        transition(asked, pending, pending, replaces=round, changes=renewal.changes)
    return True


def renew_parked(round: Round, send: Send) -> None:
    """Renew a pending round whose state deadline passed (claimed by the expiry task). A
    server that cannot be reached is tried again at the claim's end; any other failure
    expires the round as it would have without the policy."""
    if round.status != Round.Status.PENDING or not _wanted(round.call, round):
        return  # answered meanwhile, or past the person's deadline: expiry decides
    call, where = round.call, {"renewals": round.renewals}
    try:
        renewal = replay(call, round, send)
    except NotDelivered as exc:
        record(call, "renewal_failed", round=round, reason=f"{type(exc).__name__}: {exc}")
        return
    except (MCPError, RenewalFailed) as exc:
        record(call, "renewal_failed", round=round, reason=f"{type(exc).__name__}: {exc}")
        with contextlib.suppress(AlreadyAnswered):  # answered meanwhile: its delivery decides
            expire(round, None, notify=True)
        return
    if renewal.kind == "renewed":
        _move(call, round, Round.Status.PENDING, where, renewal, on_delivery=False)
    else:
        _settle_otherwise(call, round, Round.Status.PENDING, where, renewal)


def renew_answered(call: Call, round: Round, send: Send) -> Renewal | None:
    """An answer's delivery was refused for an expired state: renew the round in the same
    attempt (it stays ``delivering``). A ``renewed`` result means: send the answers once,
    to ``state``; ``changed`` or ``completed``: settled here; None: not renewed (the policy
    does not apply, or the renewal failed), so the round expires as without the policy."""
    if not _wanted(call, round):
        return None
    where = this_attempt(round)

    def heard(responses: Mapping[str, Any] | None, state: str | None) -> Any:
        # Each request of the replay shows the watchdog this attempt is alive.
        transition(
            round,
            Round.Status.DELIVERING,
            Round.Status.DELIVERING,
            where=where,
            heard_at=timezone.now(),
        )
        return send(responses, state)

    try:
        renewal = replay(call, round, heard)
    except (MCPError, RenewalFailed) as exc:
        record(call, "renewal_failed", round=round, reason=f"{type(exc).__name__}: {exc}")
        return None
    if renewal.kind == "renewed":
        if not _move(call, round, Round.Status.DELIVERING, where, renewal, on_delivery=True):
            return None
        return renewal
    if not _settle_otherwise(call, round, Round.Status.DELIVERING, where, renewal):
        return None
    return renewal
