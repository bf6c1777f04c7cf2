"""The websocket consumers: one for a call (its page and its rounds' pages), one for the inbox.

Both are thin: they check who is asking (``calls.access`` decides who sees a call), join the
channel-layer groups that ``events.py`` publishes to, and turn each message into a frame
(``frames.py``). A refused socket is accepted and closed at once with 4401 (not signed in) or
4403 (not allowed), so the browser learns why and htmx does not reconnect.

An open socket is closed with 4401 once its person may no longer listen: ``signouts.py`` tells
it when they sign out, their session is deleted or they are deactivated, and it checks the
session again before sending anything (``PersonSocket``), which also catches a session that
expired or whose password changed, and one that still owes its second factor (an admin or
operator who typed the password but not yet the code is not listened to either).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TypeGuard
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import User
from django.urls import reverse

from . import checks, frames
from .batch import checked
from .events import (
    INBOX_GROUP,
    call_group,
    concerns,
    is_quiet,
    session_group,
    user_group,
    user_sockets_group,
)

NOT_SIGNED_IN = 4401
NOT_ALLOWED = 4403

# On a round page a claim or release must not wipe what the person is typing: whoever may still
# answer keeps the form, and whoever may not learns it when they post.
# Nor does another person's answer to their part of a split round.
_KEEPS_ROUND_FORM = frozenset({"claimed", "released", "part_answered"})

# Progress may stream many messages a second: its socket checks the session at most this often
# (seconds). Everything else is checked every time.
PROGRESS_RECHECK = 2.0


def _query(scope: Mapping[str, Any]) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw).items()}


def _signed_in(user: AbstractBaseUser | None) -> TypeGuard[AbstractBaseUser]:
    return bool(getattr(user, "is_authenticated", False) and getattr(user, "is_active", False))


async def _current_person(session_key: str, person_id: Any) -> Any | None:
    """The person still signed in with this session, read again from the session store, or
    None; checked together with the other sockets' checks of the moment (``batch.py``,
    ``checks.people_now``)."""
    return await checked(checks.people_now, (session_key, person_id))


class PersonSocket(AsyncWebsocketConsumer):
    """A socket that listens for one signed-in person and stops when they may no longer.

    :meth:`listen_as` joins the groups that ``signouts.py`` closes (``sockets.close``), then
    checks the session; :meth:`still_signed_in` checks it again before anything is sent.
    After it closes, nothing more is sent (messages already queued are dropped).
    """

    person_id: Any = None
    session_key: str = ""
    closing = False
    checked_at = 0.0

    async def listen_as(self, user: AbstractBaseUser | None) -> bool:
        """Whether ``user`` (the scope's) is signed in with the scope's session; if so the
        socket is in the groups that close it."""
        session_key = getattr(self.scope.get("session"), "session_key", None)
        if not _signed_in(user) or not session_key:
            return False
        self.person_id, self.session_key = user.pk, session_key
        # Joined before the check: a sign-out after it is heard, one before it is seen.
        for group in (session_group(session_key), user_sockets_group(user.pk)):
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups.append(group)  # channels leaves them when the socket goes
        return await self.current_person() is not None

    async def current_person(self) -> Any | None:
        self.checked_at = time.monotonic()
        if self.person_id is None:
            return None
        return await _current_person(self.session_key, self.person_id)

    async def still_signed_in(self) -> Any | None:
        """The person, read again; or None, and the socket is closed with 4401."""
        person = await self.current_person()
        if person is None:
            await self.close(code=NOT_SIGNED_IN)
        return person

    async def sockets_close(self, message: dict[str, Any]) -> None:
        """From ``signouts.py``: signed out, session gone, or deactivated."""
        await self.close(code=NOT_SIGNED_IN)

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None:
        if self.closing:
            return
        self.closing = True
        await super().close(code=code, reason=reason)

    # AsyncWebsocketConsumer's own send, which types-channels leaves typed as AsyncConsumer's.
    async def send(  # type: ignore[override]
        self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False
    ) -> None:
        if self.closing:
            return
        await super().send(text_data=text_data, bytes_data=bytes_data, close=close)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Browsers have nothing to say on these sockets."""


async def _sees_call(user: User, call_id: int) -> bool:
    """Whether ``user`` may see the call, checked with the other sockets' checks."""
    return bool(await checked(checks.sees_calls_now, (user, call_id)))


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


class CallConsumer(PersonSocket):
    """``/ws/calls/<call_id>/?view=call|round&state=<shown>``: the call's changes and progress.

    ``view=round`` (a round page) follows the call to its next round's form or its result;
    ``view=call`` fetches the call page again. ``state`` is what the page shows (see
    :func:`shown_state`): if the call moved on between the view reading it and the socket
    opening, the page is brought up to date at once.
    """

    call_id: int
    round_page: bool
    # Who started the call (it never changes), read when the socket opens.
    started_by_id: int | None = None

    async def connect(self) -> None:
        self.call_id = int(self.scope["url_route"]["kwargs"]["call_id"])
        query = _query(self.scope)
        self.round_page = query.get("view") == "round"
        user = self.scope.get("user")
        refusal: int | None = NOT_SIGNED_IN
        if await self.listen_as(user):
            self.started_by_id = await checked(checks.watched_calls_now, (user, self.call_id))
            refusal = None if self.started_by_id is not None else NOT_ALLOWED
        if refusal is None:
            # Subscribed before the socket is open: an event raised as soon as the browser
            # knows it is listening must reach it.
            await self.channel_layer.group_add(call_group(self.call_id), self.channel_name)
            self.groups.append(call_group(self.call_id))
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

    # -- messages from events.py ----------------------------------------------------------------

    async def call_event(self, message: dict[str, Any]) -> None:
        kind = str(message["kind"])
        if self.closing or (self.round_page and kind in _KEEPS_ROUND_FORM):
            return
        person = await self.still_signed_in()
        if person is None:
            return
        # Rounds move between people: whoever no longer sees the call stops hearing of it.
        # Its starter and admins see it whatever happens to its rounds: asked at once.
        if not (
            (
                self.started_by_id is not None
                and checks.sees_call_at_once(person, self.started_by_id)
            )
            or await _sees_call(person, self.call_id)
        ):
            await self.close(code=NOT_ALLOWED)
            return
        await self._refresh(kind, float(message["at"]))

    async def call_progress(self, message: dict[str, Any]) -> None:
        if self.closing:
            return
        due = time.monotonic() - self.checked_at >= PROGRESS_RECHECK
        if due and await self.still_signed_in() is None:
            return
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


class InboxConsumer(PersonSocket):
    """``/ws/inbox/?page=<path of the page>``: "your inbox changed", for the signed-in person.

    Every page of a signed-in person holds one (the count in the header); on the inbox pages the
    lists are fetched again too, keeping the page's own query (paging).
    """

    async def connect(self) -> None:
        user = self.scope.get("user")
        signed_in = await self.listen_as(user)
        if signed_in:
            # Subscribed before the socket is open (see CallConsumer.connect).
            self.refetch_url, self.select = _inbox_parts(_query(self.scope).get("page", ""))
            # Its own group for events of a few people, everyone's for events of many
            # (events.inbox_sends: each event goes one way, so it is heard once).
            for group in (user_group(self.person_id), INBOX_GROUP):
                await self.channel_layer.group_add(group, self.channel_name)
                self.groups.append(group)
        await self.accept()
        if not signed_in:
            await self.close(code=NOT_SIGNED_IN)

    async def inbox_changed(self, message: dict[str, Any]) -> None:
        # Another person's event, sent to every inbox: this socket neither checks nor sends.
        if self.closing or not concerns(message, self.person_id):
            return
        if await self.still_signed_in() is None:
            return
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
