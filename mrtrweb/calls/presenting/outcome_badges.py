"""What came of a call, in words people use: decided here once for every list and page.

- ``Outcome`` (``call_outcome``, ``outcome_of``, ``outcomes_for``): a call's outcome as one
  badge, from its status, its result's ``isError`` and the answers given to its rounds;
  ``with_error_flag`` works the ``isError`` out in the database for lists;
- ``listed_calls``: the calls of a list, each with its outcome;
- ``expiry_of``: why an expired call expired, so pages say what really happened.

How a round reads (its questions, headline and answers) is ``presenting``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy

from ..models import Call, Round

# -- what came of a call ----------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What came of a call, as one badge: ``key`` (its CSS class) and ``label``."""

    key: str
    label: str | Promise  # translated when shown (a lazy string)
    tone: str  # live, good, refused, stopped, bad: the badge's colour

    def __str__(self) -> str:
        return str(self.label)


OUTCOMES = {
    "running": Outcome("running", gettext_lazy("Running"), "live"),
    "waiting": Outcome("waiting", gettext_lazy("Waiting for an answer"), "live"),
    "answered": Outcome("answered", gettext_lazy("Answered"), "good"),
    "completed": Outcome("completed", gettext_lazy("Completed"), "good"),
    "declined": Outcome("declined", gettext_lazy("Declined"), "refused"),
    "cancelled": Outcome("cancelled", gettext_lazy("Cancelled"), "stopped"),
    "expired": Outcome("expired", gettext_lazy("Expired"), "stopped"),
    "failed": Outcome("failed", gettext_lazy("Failed"), "bad"),
    "tool_error": Outcome("tool_error", gettext_lazy("Tool error"), "bad"),
}


def round_action(answers: Any) -> str:
    """accept, decline or cancel when every question got the same answer; "mixed" when they
    differ; "" before an answer."""
    if not isinstance(answers, Mapping):
        return ""
    actions = {a.get("action") for a in answers.values() if isinstance(a, Mapping)}
    if len(actions) == 1:
        action = actions.pop()
        return action if isinstance(action, str) else ""
    return "mixed" if actions else ""


def call_outcome(status: str, *, is_error: bool = False, actions: Sequence[str] = ()) -> Outcome:
    """The outcome of a call in ``status``, from its result's ``isError`` and the answers
    given to its rounds in order (``round_action`` of each): the last answer decides."""
    if status != Call.Status.COMPLETED:
        keys: dict[str, str] = {
            Call.Status.RUNNING: "running",
            Call.Status.WAITING: "waiting",
            Call.Status.FAILED: "failed",
            Call.Status.CANCELLED: "cancelled",
            Call.Status.EXPIRED: "expired",
        }
        return OUTCOMES[keys.get(status, "failed")]
    if is_error:
        return OUTCOMES["tool_error"]
    answered = [a for a in actions if a]
    if not answered:
        return OUTCOMES["completed"]
    last = answered[-1]
    if last == "decline":
        return OUTCOMES["declined"]
    if last == "cancel":
        return OUTCOMES["cancelled"]
    return OUTCOMES["answered"]


def with_error_flag(calls: QuerySet[Call]) -> QuerySet[Call]:
    """``calls`` with ``result_is_error`` worked out in the database (lists need no results)."""
    return calls.annotate(
        result_is_error=ExpressionWrapper(Q(result__isError=True), output_field=BooleanField())
    )


def _is_error(call: Call) -> bool:
    # Annotated (``with_error_flag``): NULL, for a call without a result, is no error.
    if hasattr(call, "result_is_error"):
        return bool(call.result_is_error)
    return isinstance(call.result, Mapping) and call.result.get("isError") is True


def outcome_of(call: Call, rounds: Sequence[Round]) -> Outcome:
    """The outcome of one call whose rounds are at hand (the call page)."""
    ordered = sorted(rounds, key=lambda r: r.index)
    return call_outcome(
        call.status, is_error=_is_error(call), actions=[round_action(r.answers) for r in ordered]
    )


def outcomes_for(calls: Collection[Call]) -> dict[int, Outcome]:
    """The outcome of each call of a list, in one query for all their answers (the calls
    should come through ``with_error_flag``, or their results are read)."""
    finished = [c.pk for c in calls if c.status == Call.Status.COMPLETED]
    actions: dict[int, list[str]] = {}
    if finished:
        answered = (
            Round.objects.filter(call_id__in=finished, answers__isnull=False)
            .order_by("call_id", "index")
            .values_list("call_id", "answers")
        )
        for call_id, answers in answered:
            actions.setdefault(call_id, []).append(round_action(answers))
    return {
        c.pk: call_outcome(c.status, is_error=_is_error(c), actions=actions.get(c.pk, ()))
        for c in calls
    }


@dataclass(frozen=True)
class ListedCall:
    """A call in a list, with its outcome."""

    call: Call
    outcome: Outcome


def listed_calls(calls: Collection[Call]) -> list[ListedCall]:
    outcomes = outcomes_for(calls)
    return [ListedCall(c, outcomes[c.pk]) for c in calls]


# -- why a call expired -----------------------------------------------------------------------


@dataclass(frozen=True)
class Expiry:
    """Why an expired call expired: ``unanswered`` (nobody answered before the deadline;
    nothing was sent), ``refused`` (the server no longer accepted the round),
    ``waited`` (it expired while it waited for an account to be reconnected) or ``lost``
    (a handshake-era server's question whose connection was lost: engine.streams)."""

    why: str
    answered: bool  # whether any answer was given (and is kept)
    round: Round | None


def expiry_of(rounds: Sequence[Round]) -> Expiry:
    expired = [r for r in rounds if r.status == Round.Status.EXPIRED]
    answered = any(r.answers for r in rounds)
    if not expired:
        return Expiry("refused", answered, None)
    last = expired[-1]
    if last.carrier == Round.Carrier.STREAM and last.delivery_error:
        return Expiry("lost", answered, last)
    if not last.answers:
        return Expiry("unanswered", answered, last)
    if last.delivery_error:
        return Expiry("refused", answered, last)
    return Expiry("waited", answered, last)
