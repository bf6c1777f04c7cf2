"""The state machine of a call and its rounds: the one place that changes their status.

    start ──► running ──► completed | failed
                 │ InputRequiredResult with requests
                 ▼
              waiting ◄──────────────────────────────┐
   round:     pending ──answer──► submitted ──claim──► delivering ──► delivered
                 │                  ▲  ▲  ▲                │ (next round, or the result)
                 │                  │  │  └─ backoff task ─┤ not delivered
                 │                  │  └── retry ── failed ◄┤ (budget or lifetime used up, 4xx)
                 │                  └── resend ── unknown ◄─┘ (outcome unknown: an admin decides)
                 └── expired (requestState rejected, or past its lifetime) / cancelled
   a request refused until the caller reconnects their account: delivering ──► submitted
   (call.waiting_for_authorization_since set; the account connected sends it, once)
   a handshake-era server's question (round.carrier "stream"): the same statuses, its answer
   claimed and sent on the call's stream by the process holding it (round.owner); never
   failed, unknown or resent: expired at its deadline, or lost (owner or stream gone)

This module is the front door: callers write ``from mrtrweb.calls import engine`` and
``engine.answer(...)``. One job a module behind it, each importing only those before it:

- ``transitions``: :func:`transition`, the guarded update every status change goes through;
  ``trail``: the audit trail and its announcement (``calls.signals.call_event``);
- ``progress``: a server's progress announced (``calls.signals.call_progress``), kept, heard;
- ``outcomes``: how each outcome of a request settles its call or round;
- ``expiry``, ``watchdogs``: state lifetimes, dead senders;
- ``renewal_policy``: the renewal policy's say (:func:`renewable`: is a call's expired round run
  again rather than expired), and how two rounds' questions compare;
- ``reminders``: a pending round's reminders planned and sent, once each, as its call's
  policy says; ``escalation``: a round unanswered too long reassigned to the policy's
  fallback, and :func:`remind_if_due`, what the scheduler runs for a round due;
- ``parking``: :func:`park`, a round a person must answer;
- ``streams``: questions on a handshake-era call's stream as rounds (their owner, its
  heartbeat, lost rounds);
- ``due``: :func:`run_due`, what is due on calls and rounds done (the scheduler's tick);
- ``resuming``: :func:`resume_authorized`, what waited for an account queued once it is
  connected;
- ``renewal_replay``: a round whose state died, its call issued again, verified and moved onto the
  fresh state (the network handed in by the exchange);
- ``exchange``: one request sent and its outcome settled (the engine's edge); :func:`renew`;
- ``handshake_calls``: a handshake-era call's conversation, on the shared event loop;
- ``starting``: :func:`create_call`, :func:`start_call`, :func:`send_call`, :func:`restart`;
- ``resubmitting``: :func:`resubmit`, a round's answers sent back, once;
- ``quorum``: a round N people approve: the first answers kept as a proposal,
  :func:`vote` (approve or reject), the proposal (or a decline) submitted once;
- ``answering``: :func:`answer`, a person's answers (and their comment) stored once;
- ``actions``: claim, release, reassign, cancel, retry, resend, abandon.

Tasks are queued through :mod:`mrtrweb.calls.queue` and run on delivery threads through
:mod:`mrtrweb.calls.handoff`; neither imports the engine. Nothing is queued for later: rows
hold their due times, and the scheduler (:mod:`mrtrweb.scheduler`) runs :func:`run_due`.
"""

from __future__ import annotations

from .actions import (
    abandon,
    abandon_flagged,
    cancel_round,
    claim,
    reassign,
    release,
    resend,
    retry_delivery,
)
from .answering import answer, saved_answers_for
from .due import BATCH, claim_each, remind_due, run_due
from .escalation import remind_if_due
from .exchange import renew
from .expiry import expire, expire_if_due
from .handshake_calls import wait_idle
from .parking import park
from .quorum import (
    AlreadyVoted,
    NoProposal,
    NotEligible,
    SelfApproval,
    tally,
    vote,
    why_cannot_vote,
)
from .renewal_policy import renewable
from .resubmitting import resubmit
from .resuming import resume_authorized
from .starting import (
    NothingStarted,
    StartRequest,
    create_call,
    restart,
    run_call,
    send_call,
    start_call,
)
from .streams import lose_if_orphaned
from .trail import note
from .transitions import (
    AlreadyAnswered,
    EngineError,
    NotAnswerable,
    transition,
    transition_call,
)
from .watchdogs import (
    call_stuck_after,
    check_call,
    check_delivery,
    stuck_after,
)

__all__ = [
    "BATCH",
    "AlreadyAnswered",
    "AlreadyVoted",
    "EngineError",
    "NoProposal",
    "NotAnswerable",
    "NotEligible",
    "NothingStarted",
    "SelfApproval",
    "StartRequest",
    "abandon",
    "abandon_flagged",
    "answer",
    "call_stuck_after",
    "cancel_round",
    "check_call",
    "check_delivery",
    "claim",
    "claim_each",
    "create_call",
    "expire",
    "expire_if_due",
    "lose_if_orphaned",
    "note",
    "park",
    "reassign",
    "release",
    "remind_due",
    "remind_if_due",
    "renew",
    "renewable",
    "resend",
    "restart",
    "resubmit",
    "resume_authorized",
    "retry_delivery",
    "run_call",
    "run_due",
    "saved_answers_for",
    "send_call",
    "start_call",
    "stuck_after",
    "tally",
    "transition",
    "transition_call",
    "vote",
    "wait_idle",
    "why_cannot_vote",
]
