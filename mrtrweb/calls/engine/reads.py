"""The engine's reads of one call or round by its key, with the rows sending it needs.

They run on every start, answer and delivery, so each is compiled once (``db.prepared``):
Django's own statement and rows, without building and compiling the ``select_related``
queryset each time. Each raises the model's ``DoesNotExist`` as ``get()`` would.
"""

from __future__ import annotations

from mrtrweb.db.prepared import Prepared

from ..models import Call, Round

_CALL_TO_SEND = Prepared(
    lambda pk: Call.objects.select_related("connection", "started_by").filter(pk=pk), int
)
_ROUND_TO_SEND = Prepared(
    lambda pk: Round.objects.select_related("call__connection", "call__started_by").filter(pk=pk),
    int,
)
_ROUND_WITH_CALL = Prepared(lambda pk: Round.objects.select_related("call").filter(pk=pk), int)


def call_to_send(pk: int) -> Call:
    """Call ``pk`` with its connection and the person who started it."""
    call = _CALL_TO_SEND.first(pk)
    if call is None:
        raise Call.DoesNotExist(f"No call {pk}.")
    return call


def call_as_now(pk: int) -> Call:
    """Call ``pk`` as it is now, with the same rows: what a caller that waited for its send
    shows or returns."""
    return call_to_send(pk)


def round_to_send(pk: int) -> Round:
    """Round ``pk`` with its call, the call's connection and the person who started it."""
    round: Round | None = _ROUND_TO_SEND.first(pk)
    if round is None:
        raise Round.DoesNotExist(f"No round {pk}.")
    return round


def round_with_call(pk: int) -> Round:
    """Round ``pk`` with its call, as they are now."""
    round: Round | None = _ROUND_WITH_CALL.first(pk)
    if round is None:
        raise Round.DoesNotExist(f"No round {pk}.")
    return round
