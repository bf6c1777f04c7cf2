"""The engine's reads of one call or round by its key, with the rows sending it needs.

Each is one statement (the related rows joined in, ``select_related``) and raises the
model's ``DoesNotExist`` as ``get()`` does.
"""

from __future__ import annotations

from ..models import Call, Round


def call_to_send(pk: int) -> Call:
    """Call ``pk`` with its connection and the person who started it."""
    return Call.objects.select_related("connection", "started_by").get(pk=pk)


def call_as_now(pk: int) -> Call:
    """Call ``pk`` as it is now, with the same rows: what a caller that waited for its send
    shows or returns."""
    return call_to_send(pk)


def round_to_send(pk: int) -> Round:
    """Round ``pk`` with its call, the call's connection and the person who started it."""
    round: Round = Round.objects.select_related("call__connection", "call__started_by").get(pk=pk)
    return round


def round_with_call(pk: int) -> Round:
    """Round ``pk`` with its call, as they are now."""
    round: Round = Round.objects.select_related("call").get(pk=pk)
    return round
