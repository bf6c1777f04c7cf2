"""The one page view of the live app: where a call goes next, for a round page to follow it."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpResponse
from django.views.decorators.http import require_safe

from mrtrweb.calls.access import can_answer, newest_pending, visible_call
from mrtrweb.calls.models import Call
from mrtrweb.calls.pages import watching
from mrtrweb.http import SeeOther, SignedInRequest

# How long ``?hold=1`` (the call page's reload without JavaScript) holds the request while
# the call is on its way: well under the read timeouts of proxies (a minute, commonly); a
# call slower than that gets the call page again, which reloads itself into another hold.
HOLD_SECONDS = 15.0


@login_required
@require_safe
async def next_step(request: SignedInRequest, pk: int) -> HttpResponse:
    """The newest round of the call that waits for this person's answer, else the call page.

    A round page that watches its call fetches this when the call moves on, so it shows the
    next round's form or the result; the pages it leads to apply their own access rules.

    With ``?hold=1`` (the call page without JavaScript reloads itself so), a call whose
    request or answers are on their way holds the request until the server asked or answered
    (:mod:`mrtrweb.calls.pages.watching`), up to :data:`HOLD_SECONDS`: one held request instead of a
    reload of the call page every second.
    """
    user = await request.auser()
    call = await sync_to_async(visible_call)(user, pk)
    if call is None:
        raise Http404("No call")
    if request.GET.get("hold"):
        await watching.hold(call.pk, HOLD_SECONDS, _arrived)
    return SeeOther(await sync_to_async(_next_page)(user, call))


def _arrived(first: watching.Seen, now: watching.Seen) -> bool:
    return not watching.in_flight(now)


def _next_page(user: User, call: Call) -> str:
    waiting = newest_pending(user, call)
    if waiting is not None and can_answer(user, waiting):
        return waiting.get_absolute_url()
    return call.get_absolute_url()
