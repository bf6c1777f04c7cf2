"""Publishing what the engine announces to the browsers that watch it.

Subscribed to :data:`mrtrweb.calls.signals.call_event` (``LiveConfig.ready``), so it runs after
the change committed, in whichever process made it: a web process or a task worker. It sends
small messages to channel-layer groups; the consumers (``consumers.py``) turn them into HTML
frames for each socket. Nothing here renders a person's data: the inbox gets "your inbox
changed" and fetches its own rows through its view, which applies the access rules.

Groups: ``call.<id>`` (every socket watching that call), ``user.<id>`` (every inbox socket of
that person) and ``inbox.everyone`` (every inbox socket of the deployment: an event for many
people is one message there, naming them; see :func:`inbox_sends`); ``signouts.py`` closes
sockets through ``session.<hash>`` and ``user.<id>.sockets``. Each message carries ``at``,
``time.time()`` when it was published, which the frames carry as ``data-live-at`` so the
benchmarks can measure the latency to the browser.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import time
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

logger = logging.getLogger(__name__)

# Kinds that change nothing a page shows: the call was just created (no page watches it yet),
# a state-only retry (never shown), a round's server state renewed or a renewal that failed
# (the renewal policy: every state lifetime, while a person may be typing; nothing they see
# changes), and what the webhooks app notes about itself.
_QUIET_KINDS = frozenset({"started", "state_only_retry", "renewed", "renewal_failed"})


def call_group(call_id: int) -> str:
    return f"call.{call_id}"


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


# Every inbox socket of the deployment, in every process.
INBOX_GROUP = "inbox.everyone"

# From this many people on, an event's inbox message goes once to INBOX_GROUP naming them,
# instead of once to each ``user.<id>``. With Redis a group send is four round trips one after
# the other (channels-redis 4.3: two expiry sweeps, the member list, the send), and each
# message reaches a process on its own receive, so an event for 500 people sent per person is
# 2,000 round trips for the sender and 500 receives, in many small check batches, for the web
# process (P6). One message reaches each process once and wakes its concerned sockets
# together. Below it, the per-person sends cost less than waking every inbox socket.
BROADCAST_FROM = 16
# The in-memory layer (one process): never. There a per-person send is no round trip, and
# channels' in-memory group_send yields between people, so the first sockets' checks run while
# the rest are still being sent; one message wakes every inbox socket and holds every frame
# until all 500 are checked (80-280 ms more web CPU per event under the same load).
IN_MEMORY_BROADCAST_FROM: int | None = None


def user_sockets_group(user_id: int) -> str:
    """Every socket of that person, whatever it watches: closed when they are deactivated."""
    return f"user.{user_id}.sockets"


def session_group(session_key: str) -> str:
    """Every socket opened with that session: closed when it ends. Named by a hash, so the
    key (a bearer credential) never travels through the channel layer."""
    return "session." + hashlib.sha256(session_key.encode()).hexdigest()


def is_quiet(kind: str) -> bool:
    return kind in _QUIET_KINDS or kind.startswith("webhook")


def inbox_sends(
    user_ids: Iterable[int], kind: str, at: float, broadcast_from: int | None = BROADCAST_FROM
) -> list[tuple[str, dict[str, Any]]]:
    """The ``inbox.changed`` messages telling ``user_ids`` their inbox changed: one per person,
    or, from ``broadcast_from`` people on, one to :data:`INBOX_GROUP` whose ``people`` names
    them (ids only, comma separated: a string is shared, not copied, by the in-memory layer's
    per-socket copies). Either way nothing of the change travels, only that there is one."""
    people = sorted(user_ids)
    message: dict[str, Any] = {"type": "inbox.changed", "kind": kind, "at": at}
    if broadcast_from is None or len(people) < broadcast_from:
        return [(user_group(user_id), message) for user_id in people]
    return [(INBOX_GROUP, {**message, "people": ",".join(map(str, people))})]


def broadcast_from() -> int | None:
    """From how many people this process's layer sends an event's inbox message once."""
    if isinstance(get_channel_layer(), InMemoryChannelLayer):
        return IN_MEMORY_BROADCAST_FROM
    return BROADCAST_FROM


def concerns(message: dict[str, Any], person_id: Any) -> bool:
    """Whether an ``inbox.changed`` message is for ``person_id``: a ``user.<id>`` one always
    is; an :data:`INBOX_GROUP` one if it names them."""
    people = message.get("people")
    return people is None or person_id in _named(people)


@functools.lru_cache(maxsize=8)
def _named(people: str) -> frozenset[int]:
    # Every inbox socket of the process asks about the same message: it is read once.
    return frozenset(int(part) for part in people.split(",") if part)


# -- getting a message onto the layer from any thread --------------------------------------------

# The event loop of the ASGI server in this process, once it has served something (set by
# ``worker.serve_inprocess_worker``). The in-memory channel layer keeps asyncio queues that
# belong to that loop, so a message raised in another thread (the in-process task worker)
# must be handed to that loop rather than sent from a loop of its own.
_web_loop: asyncio.AbstractEventLoop | None = None
_SEND_TIMEOUT = 10.0


def remember_web_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    global _web_loop
    _web_loop = loop


def _live_web_loop() -> asyncio.AbstractEventLoop | None:
    loop = _web_loop
    if loop is None or loop.is_closed() or not loop.is_running():
        return None
    return loop


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _send_all(sends: Iterable[tuple[str, dict[str, Any]]]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    for group, message in sends:
        await layer.group_send(group, message)


def publish(sends: list[tuple[str, dict[str, Any]]]) -> None:
    """Send ``(group, message)`` pairs, in order, from synchronous code in any thread."""
    if not sends:
        return
    loop = _live_web_loop()
    if loop is None:
        # No web server in this process (a db_worker, a command), or a test: asgiref finds
        # the right loop (the outer one when called from sync_to_async).
        async_to_sync(_send_all)(sends)
    elif _running_loop() is loop:
        # Synchronous code on the loop's own thread cannot wait for the loop: queue it.
        loop.create_task(_send_all(sends))
    else:
        asyncio.run_coroutine_threadsafe(_send_all(sends), loop).result(_SEND_TIMEOUT)


async def apublish(sends: list[tuple[str, dict[str, Any]]]) -> None:
    """Send ``(group, message)`` pairs, in order, from a coroutine on any event loop."""
    loop = _live_web_loop()
    if loop is None or _running_loop() is loop:
        await _send_all(sends)
    else:
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_send_all(sends), loop))


# -- the receiver ----------------------------------------------------------------------------------


def on_call_event(
    sender: Any,
    *,
    call_id: int,
    round_id: int | None = None,
    kind: str,
    detail: dict[str, Any] | None = None,
    started_by_id: int | None = None,
    people: tuple[set[int | None], set[int | None]] | None = None,
    **_: Any,
) -> None:
    """Tell the call's watchers and the people whose inbox it touches.

    ``people``: whom a round's event concerns (user ids, group ids), when the engine that
    just wrote the round knows it (a round parked); else they are looked up."""
    if is_quiet(kind):
        return
    at = time.time()
    event = {"call_id": call_id, "round_id": round_id, "kind": kind, "at": at}
    sends: list[tuple[str, dict[str, Any]]] = [
        (call_group(call_id), {"type": "call.event", **event})
    ]
    concerned = concerned_users(call_id, round_id, kind, started_by_id, people)
    sends += inbox_sends(concerned, kind, at, broadcast_from())
    try:
        publish(sends)
    except Exception:
        # A page that misses an event still shows the truth on reload; the engine must go on.
        logger.exception("could not publish %s of call %s", kind, call_id)


def concerned_users(
    call_id: int,
    round_id: int | None,
    kind: str,
    started_by_id: int | None = None,
    people: tuple[set[int | None], set[int | None]] | None = None,
) -> set[int]:
    """Whose inbox or history may have changed: the caller, and everyone the round is (or
    was, before a reassignment) routed to, claimed by or answered by.

    ``started_by_id``, when the event carries it, spares looking the caller up for a call's
    own events; ``people`` (user and group ids the engine knows for sure) spares reading the
    round."""
    # Imported here: this module is imported by the engine's callers before apps are ready.
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from mrtrweb.calls.models import Call, Event, Round, RoundPart

    users: set[int | None] = set()
    groups: set[int | None] = set()
    if round_id is None and started_by_id is not None:
        users.add(started_by_id)
    elif round_id is None:
        users |= set(Call.objects.filter(pk=call_id).values_list("started_by_id", flat=True))
    elif people is not None and kind not in ("reassigned", "escalated"):
        users |= people[0]
        groups |= people[1]
    else:
        # The caller comes with the round: one query per event, on every event of a round.
        for row in Round.objects.filter(pk=round_id).values(
            "call__started_by_id",
            "assigned_user_id",
            "assigned_group_id",
            "claimed_by_id",
            "answered_by_id",
            "split",
            "delegated_from_id",
        ):
            users |= {
                row["call__started_by_id"],
                row["assigned_user_id"],
                row["claimed_by_id"],
                row["answered_by_id"],
                row["delegated_from_id"],  # who is away still sees the rounds handed on
            }
            groups.add(row["assigned_group_id"])
            if row["split"]:
                # A split round's parts go to people of their own.
                for part in RoundPart.objects.filter(round_id=round_id).values(
                    "assigned_user_id", "assigned_group_id", "answered_by_id"
                ):
                    users |= {part["assigned_user_id"], part["answered_by_id"]}
                    groups.add(part["assigned_group_id"])
        if kind in ("reassigned", "escalated"):
            # The event names the new route; the one before it names whom the round left.
            routes = Event.objects.filter(
                round_id=round_id, kind__in=("round_parked", "reassigned", "escalated")
            ).order_by("-id")
            for previous in routes[1:2]:
                # Whom it was handed on from too: a reassignment ends that.
                names = [previous.detail.get(k) for k in ("assigned_user", "delegated_from")]
                group_name = previous.detail.get("assigned_group")
                User = get_user_model()
                if any(names):
                    users |= set(
                        User.objects.filter(
                            **{f"{User.USERNAME_FIELD}__in": [n for n in names if n]}
                        ).values_list("pk", flat=True)
                    )
                if group_name:
                    groups |= set(
                        Group.objects.filter(name=group_name).values_list("pk", flat=True)
                    )
    groups.discard(None)
    if groups:
        users |= set(
            get_user_model()
            .objects.filter(groups__in=groups, is_active=True)
            .values_list("pk", flat=True)
        )
    users.discard(None)
    return {int(u) for u in users if u is not None}


# -- progress of a long call -----------------------------------------------------------------------


async def on_call_progress(
    sender: Any,
    *,
    call_id: int,
    progress: float,
    total: float | None,
    message: str,
    at: float,
    **_: Any,
) -> None:
    """Progress a server streams (``calls.signals.call_progress``, already thinned by the
    engine to a few a second) goes to ``call.<id>`` as ``call.progress``."""
    frame = {
        "type": "call.progress",
        "call_id": call_id,
        "progress": progress,
        "total": total,
        "message": message,
        "at": at,
    }
    try:
        await apublish([(call_group(call_id), frame)])
    except Exception:
        logger.exception("could not publish progress of call %s", call_id)
