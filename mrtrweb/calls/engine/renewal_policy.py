"""The renewal policy: rounds that outlive the server's state.

A server keeps a round's ``requestState`` for minutes (ten in fastmcp and the official SDK);
a person may answer days later. When a call's policy renews expired rounds
(``PolicySnapshot.renew_expired``) and its tool is safe to run again (it declares
``readOnlyHint`` or ``idempotentHint``, or an operator set ``renew_unsafe``), a round whose
state dies unanswered is not expired: the call is issued again with the exact argument text,
earlier rounds' answers are replayed when the server asks the very same questions again, and
the waiting round is moved onto the fresh state (:mod:`.renewal_replay` does that part). The person
sees the policy's deadline (:attr:`Round.renew_until`), never the server's.

This module is the policy side only (no network, nothing of the exchange), so parking and
expiry can ask it: :func:`renewable`, :func:`deadline`, :func:`expires_at`, :func:`claim`,
and the comparison of two rounds' questions (:func:`same_questions`, :func:`what_changed`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from mrtrweb.policies.snapshot import PolicySnapshot
from mrtrweb.policies.validation import renewable_tool

from .. import queue
from ..models import Call, Round
from .transitions import transition
from .watchdogs import stuck_after

__all__ = [
    "asks_consent",
    "claim",
    "deadline",
    "expires_at",
    "renewable",
    "same_questions",
    "what_changed",
]


def renewable(call: Call) -> bool:
    """Whether ``call``'s expired rounds are renewed rather than expired: its policy renews,
    and its tool is hinted read-only or idempotent or the operator allowed it anyway
    (``renew_unsafe``: "the call runs again up to its question"). Prompts and resources are
    renewed only with ``renew_unsafe`` too: they carry no hints."""
    policy = PolicySnapshot.from_json(call.policy)
    if not policy.renew_expired:
        return False
    if policy.renew_unsafe:
        return True
    return call.method == Call.Method.TOOL and renewable_tool(call.tool)


def deadline(
    call: Call, parked_at: datetime, requests: Mapping[str, Any] | None = None
) -> datetime | None:
    """The person's deadline of a round of ``call`` asking ``requests``, parked at
    ``parked_at`` (``renew_until``), or None when it is not renewed (the call's policy, or a
    round that asks consent to a link: :func:`asks_consent`)."""
    if not renewable(call) or asks_consent(requests or {}):
        return None
    seconds = PolicySnapshot.from_json(call.policy).renew_for_seconds
    return parked_at + timedelta(seconds=seconds)


def expires_at(state_ends: datetime, renew_until: datetime | None, has_state: bool) -> datetime:
    """When a round really expires (``Round.expires_at``, the expiry task's deadline), given
    when the server's state of it ends and the person's deadline (``renew_until``, None when
    the round is not renewed).

    Under renewal the round never outlives the deadline the person sees, and a round the
    server gave no ``requestState`` is kept until that deadline: there is no state on the
    server to die, so nothing to renew (:func:`claim` leaves it alone) and nothing that ends
    sooner. Without renewal it ends with its state, which is also what the person sees."""
    if renew_until is None:
        return state_ends
    if not has_state:
        return renew_until
    return min(state_ends, renew_until)


def claim(round: Round, now: datetime) -> bool:
    """Expiry's question: is this due round renewed instead of expired? If so, claim its
    renewal and queue it (``renew_round``), and say True.

    The claim moves the state deadline (``expires_at``) to when a renewal started now must
    have finished, with a guarded update, so the expiry tasks and sweeps that find the round
    due meanwhile leave it alone and only one renewal runs; should its process die, the round
    is due again then (the scheduler looks at ``expires_at``) and is claimed anew.
    """
    if (
        round.status != Round.Status.PENDING
        or round.renew_until is None
        or round.renew_until <= now
        or not round.has_request_state
        or asks_consent(round.input_requests)
        or not renewable(round.call)
    ):
        return False
    hold = now + stuck_after(round.call.connection)
    with transaction.atomic():
        if transition(
            round,
            Round.Status.PENDING,
            Round.Status.PENDING,
            where={"expires_at": round.expires_at},
            expires_at=hold,
        ):
            queue.enqueue("renew_round", round.pk)
    return True


# -- the questions of two rounds ------------------------------------------------------------


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _params(request: Any) -> Mapping[str, Any]:
    params = request.get("params") if isinstance(request, Mapping) else None
    return params if isinstance(params, Mapping) else {}


def _kind(request: Any) -> tuple[Any, Any]:
    """A request's kind: its method and (for an elicitation) its mode, form when absent."""
    method = request.get("method") if isinstance(request, Mapping) else None
    params = _params(request)
    return method, params.get("mode", "form") if method == "elicitation/create" else None


def _signature(request: Any) -> str:
    """What must be equal for a request to count as the same question: its kind, message and
    schema. A URL-mode request's URL is left out (servers mint a fresh one each time); a kind
    this client does not answer is compared whole."""
    method, mode = _kind(request)
    params = _params(request)
    if method != "elicitation/create":
        return _canonical(request)
    return _canonical(
        {
            "kind": [method, mode],
            "message": params.get("message"),
            "schema": params.get("requestedSchema"),
        }
    )


def asks_consent(requests: Mapping[str, Any]) -> bool:
    """Whether a round asks for a URL-mode step (a sign-in or payment elsewhere). Such a round
    is never renewed nor replayed: its answer is consent to one URL, which the server mints
    afresh each time, so it must be given afresh."""
    return any(_kind(request) == ("elicitation/create", "url") for request in requests.values())


def same_questions(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether two rounds' ``inputRequests`` ask the same: the same keys, and under each the
    same kind, message and schema (schemas compared as canonical JSON)."""
    return set(old) == set(new) and all(_signature(old[k]) == _signature(new[k]) for k in old)


def what_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """How ``new`` differs from ``old``, question by question, for the person asked again:
    ``{"key", "change", "message", "was"}`` with ``change`` one of ``added``, ``removed``,
    ``kind``, ``message``, ``schema`` (the first that differs). Messages are the server's
    text: the page escapes them."""
    changes: list[dict[str, Any]] = []
    for key in new:
        message = _params(new[key]).get("message")
        if key not in old:
            changes.append({"key": key, "change": "added", "message": message})
            continue
        was = _params(old[key]).get("message")
        if _kind(old[key]) != _kind(new[key]):
            change = "kind"
        elif was != message:
            change = "message"
        elif _signature(old[key]) != _signature(new[key]):
            change = "schema"
        else:
            continue
        changes.append({"key": key, "change": change, "message": message, "was": was})
    for key in old:
        if key not in new:
            was = _params(old[key]).get("message")
            changes.append({"key": key, "change": "removed", "was": was})
    return changes
