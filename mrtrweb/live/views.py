"""The one page view of the live app: where a call goes next, for a round page to follow it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_safe

from mrtrweb.calls.access import can_answer, visible_calls, visible_rounds
from mrtrweb.calls.models import Round
from mrtrweb.http import SeeOther


@login_required
@require_safe
def next_step(request: HttpRequest, pk: int) -> HttpResponse:
    """The newest round of the call that waits for this person's answer, else the call page.

    A round page that watches its call fetches this when the call moves on, so it shows the
    next round's form or the result; the pages it leads to apply their own access rules.
    """
    call = get_object_or_404(visible_calls(request.user), pk=pk)
    waiting = (
        visible_rounds(request.user)
        .filter(call=call, status=Round.Status.PENDING)
        .order_by("-index")
        .first()
    )
    if waiting is not None and can_answer(request.user, waiting):
        return SeeOther(waiting.get_absolute_url())
    return SeeOther(call.get_absolute_url())
