"""The websocket consumers: one for a call (its page and its rounds' pages), one for the inbox.

Both are thin: they check who is asking (``calls.access`` decides who sees a call), join the
channel-layer groups that ``events.py`` publishes to, and turn each message into a frame
(``frames.py``). A refused socket is accepted and closed at once with 4401 (not signed in) or
4403 (not allowed), so the browser learns why and htmx does not reconnect.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import reverse

from . import frames
from .events import call_group, is_quiet, user_group

NOT_SIGNED_IN = 4401
NOT_ALLOWED = 4403

# On a round page a claim or release must not wipe what the person is typing: whoever may still
# answer keeps the form, and whoever may not learns it when they post.
_KEEPS_ROUND_FORM = frozenset({"claimed", "released"})


def _query(scope: dict[str, Any]) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw).items()}


def _signed_in(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and getattr(user, "is_active", False))


@database_sync_to_async
def _sees_call(user: Any, call_id: int) -> bool:
    from mrtrweb.calls.access import visible_calls

    return visible_calls(user).filter(pk=call_id).exists()


def shown_state(call_status: str, rounds: list[dict[str, Any]]) -> str:
    """What a page shows of a call, as ``templates/calls/_live_socket.html`` writes it: the
    call's status, then per round its id, status, assignee, group and claimer."""

    def part(value: Any) -> str:
        return "" if value is None else str(value)

    return call_status + "".join(
        "_"
        + ".".join(
            part(r[key])
            for key in ("id", "status", "assigned_user_id", "assigned_group_id", "claimed_by_id")
        )
        for r in rounds
    )


@database_sync_to_async
def _stale_kind(call_id: int, shown: str, round_page: bool) -> str | None:
    """The newest event's kind if the page's ``shown`` state is no longer the truth."""
    from mrtrweb.calls.models import Call, Event, Round

    status = Call.objects.filter(pk=call_id).values_list("status", flat=True).first()
    rounds = list(
        Round.objects.filter(call_id=call_id)
        .order_by("index")
        .values("id", "status", "assigned_user_id", "assigned_group_id", "claimed_by_id")
    )
    if round_page:
        # A round page shows its own round only.
        wanted = {part.split(".", 1)[0] for part in shown.split("_")[1:]}
        rounds = [r for r in rounds if str(r["id"]) in wanted]
    if status is None or shown_state(status, rounds) == shown:
        return None
    kinds = Event.objects.filter(call_id=call_id).order_by("-id").values_list("kind", flat=True)
    return next((kind for kind in kinds if not is_quiet(kind)), "changed")


class CallConsumer(AsyncWebsocketConsumer):
    """``/ws/calls/<call_id>/?view=call|round&state=<shown>``: the call's changes and progress.

    ``view=round`` (a round page) follows the call to its next round's form or its result;
    ``view=call`` fetches the call page again. ``state`` is what the page shows (see
    :func:`shown_state`): if the call moved on between the view reading it and the socket
    opening, the page is brought up to date at once.
    """

    call_id: int
    round_page: bool

    async def connect(self) -> None:
        self.call_id = int(self.scope["url_route"]["kwargs"]["call_id"])
        query = _query(self.scope)
        self.round_page = query.get("view") == "round"
        user = self.scope.get("user")
        refusal = (
            NOT_SIGNED_IN
            if not _signed_in(user)
            else None
            if await _sees_call(user, self.call_id)
            else NOT_ALLOWED
        )
        if refusal is None:
            # Subscribed before the socket is open: an event raised as soon as the browser
            # knows it is listening must reach it.
            self.group = call_group(self.call_id)
            await self.channel_layer.group_add(self.group, self.channel_name)
        # Accepted either way, so a refusal carries its close code.
        await self.accept()
        if refusal is not None:
            await self.close(code=refusal)
            return
        shown = query.get("state")
        if shown:
            kind = await _stale_kind(self.call_id, shown, self.round_page)
            if kind is not None:
                await self._refresh(kind, time.time())

    async def disconnect(self, code: int) -> None:
        group = getattr(self, "group", None)
        if group is not None:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Browsers have nothing to say on this socket."""

    # -- messages from events.py ----------------------------------------------------------------

    async def call_event(self, message: dict[str, Any]) -> None:
        kind = str(message["kind"])
        if self.round_page and kind in _KEEPS_ROUND_FORM:
            return
        # Rounds move between people: whoever no longer sees the call stops hearing of it.
        if not await _sees_call(self.scope["user"], self.call_id):
            await self.close(code=NOT_ALLOWED)
            return
        await self._refresh(kind, float(message["at"]))

    async def call_progress(self, message: dict[str, Any]) -> None:
        frame = frames.progress(
            call_id=self.call_id,
            at=float(message["at"]),
            value=float(message["progress"]),
            total=message.get("total"),
            message=str(message.get("message") or ""),
        )
        await self.send(text_data=str(frame))

    async def _refresh(self, kind: str, at: float) -> None:
        if self.round_page:
            url = reverse("live:next", kwargs={"pk": self.call_id})
        else:
            url = reverse("calls:call", kwargs={"pk": self.call_id})
        frame = frames.refresh_call(
            call_id=self.call_id, kind=kind, at=at, url=url, follow_url=self.round_page
        )
        await self.send(text_data=str(frame))


class InboxConsumer(AsyncWebsocketConsumer):
    """``/ws/inbox/?page=<path of the page>``: "your inbox changed", for the signed-in person.

    Every page of a signed-in person holds one (the count in the header); on the inbox pages the
    lists are fetched again too, keeping the page's own query (paging).
    """

    async def connect(self) -> None:
        user = self.scope.get("user")
        if _signed_in(user):
            # Subscribed before the socket is open (see CallConsumer.connect).
            self.refetch_url, self.select = _inbox_parts(_query(self.scope).get("page", ""))
            self.group = user_group(user.pk)
            await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        if not _signed_in(user):
            await self.close(code=NOT_SIGNED_IN)

    async def disconnect(self, code: int) -> None:
        group = getattr(self, "group", None)
        if group is not None:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Browsers have nothing to say on this socket."""

    async def inbox_changed(self, message: dict[str, Any]) -> None:
        frame = frames.refresh_inbox(
            kind=str(message["kind"]),
            at=float(message["at"]),
            url=self.refetch_url,
            select=self.select,
        )
        await self.send(text_data=str(frame))


def _inbox_parts(page: str) -> tuple[str, str]:
    """Which URL to fetch again and which of its parts to swap in, for the page at ``page``.

    Only the inbox's own pages are fetched as given (they keep their paging); anything else
    fetches the inbox for the count in the header.
    """
    index, history = reverse("inbox:index"), reverse("inbox:history")
    if page.startswith(history):
        return page, "#inbox-count,#history-answered,#history-started"
    if page.startswith(index) and not page.startswith(index + "/"):
        return page, "#inbox-count,#inbox-pending"
    return index, "#inbox-count"
