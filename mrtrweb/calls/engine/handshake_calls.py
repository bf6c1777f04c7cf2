"""Calls on handshake-era servers (MCP 2025-11-25, 2025-06-18): the call's conversation.

A call on such a server is one ``tools/call`` (``prompts/get``, ``resources/read``) in a
session of its own, closed when the call is done (:class:`mrtrweb.mcp.handshake.
HandshakeClient`). Its questions come as ``elicitation/create`` requests on the request's
open stream, and their answers go back as JSON-RPC responses on it: only the process holding
the stream can send them, so that process owns the call until it ends (engine.streams).

The conversation runs as a task on the process's shared event loop (:mod:`mrtrweb.mcp.
io_loop`), not on a delivery thread: a person may take minutes to answer, and the delivery
threads are a small pool. Its database work runs in worker threads
(``sync_to_async(thread_sensitive=False)``), each closing its connections after.

Each question is parked as a round (:func:`.streams.park_question`, by the same code as a
2026-07-28 round), then waited for: the database is looked at every :data:`POLL` seconds, so
an answer taken by any process is seen; the owner claims it once and returns it as the
``ElicitResult`` the client sends. While the call lasts the owner beats on its open rounds
every :data:`BEAT` seconds; a round whose owner stopped beating is lost (the scheduler,
:mod:`.due`). On shutdown (:func:`mrtrweb.calls.handoff.stopping`) a waiting
question is answered "cancel" and its round marked lost at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import mcp_types
from asgiref.sync import sync_to_async
from django.db import close_old_connections, connections, transaction
from django.utils import timezone

from mrtrweb.authorizations.credentials import DatabaseAuthenticator, authenticator_for
from mrtrweb.mcp import JSONRPCError, MCPError, io_loop
from mrtrweb.mcp.errors import AnswerNotDelivered
from mrtrweb.mcp.handshake import HandshakeClient

from .. import handoff
from ..models import Call, Round
from .exchange import settle_failure, settle_result
from .outcomes import fail_call
from .progress import on_progress
from .reads import call_to_send
from .streams import (
    OPEN,
    beat,
    grace,
    lose,
    owner_id,
    park_question,
    settle_delivered,
    take,
    withdraw,
)
from .trail import dump
from .watchdogs import call_stuck_after

__all__ = ["BACKSTOP", "BEAT", "NO_SESSION", "POLL", "beat_interval", "converse", "wait_idle"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# A server without sessions (no Mcp-Session-Id) cannot take an answer: the SDKs post it to a
# new instance of the server that never asked (tests/peers/test_handshake_peers.py).
NO_SESSION = (
    "This server runs without sessions, so it cannot receive an answer to its question. Ask "
    "its operator to run it with sessions."
)

STOPPED = (
    "mrtrweb stopped while the server was working on this call, so its answer was lost: the "
    "server may or may not have run it. Start it again if it should run."
)

# How often a waiting question looks for its answer in the database, and how often at most the
# owner beats on its rounds: every BEAT seconds, or a third of MRTRWEB_STREAM_GRACE when that is
# shorter (a beat slower than the grace would have a live owner's rounds marked lost).
POLL = 0.3
BEAT = 5.0


def beat_interval() -> float:
    return max(POLL, min(BEAT, grace().total_seconds() / 3))


# The conversation answers a question at its deadline itself; the client's own question
# deadline is a backstop this much later (a cancelled database call could leave a round
# claimed and its answer unsent).
BACKSTOP = 30.0
# On shutdown, how long a call is kept after its waiting question was answered "cancel".
STOP_GRACE = 1.0

_live: set[Future[None]] = set()
_live_lock = threading.Lock()


async def _db(work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``work`` in a worker thread, its database connections closed after: a conversation
    lasts minutes and must hold no connection (nor a thread) while it waits."""

    def run() -> T:
        close_old_connections()
        try:
            return work(*args, **kwargs)
        finally:
            connections.close_all()

    return await sync_to_async(run, thread_sensitive=False)()


def converse(call: Call) -> Future[None]:
    """Start ``call``'s conversation on the shared loop (its first request is claimed already:
    ``engine.send_call``), and return once it is settled for now: a question parked, or the
    call finished. The rest of it goes on without holding this thread."""
    settled = threading.Event()
    future = io_loop.submit(_Conversation(call, settled).run())
    handoff.track(future)
    with _live_lock:
        _live.add(future)
    future.add_done_callback(_ended)
    future.add_done_callback(lambda _: settled.set())
    settled.wait()
    return future


def _ended(future: Future[None]) -> None:
    with _live_lock:
        _live.discard(future)


def wait_idle(timeout: float) -> bool:
    """Wait until no conversation runs in this process (tests, commands); True if none does."""
    with _live_lock:
        live = list(_live)
    for future in live:
        with contextlib.suppress(Exception):
            future.result(timeout=timeout)
    with _live_lock:
        return not _live


@dataclasses.dataclass
class _Conversation:
    call: Call
    settled: threading.Event
    owner: str = dataclasses.field(default_factory=owner_id)
    authenticator: DatabaseAuthenticator | None = None
    asking: int = 0
    client: HandshakeClient | None = None
    talk: asyncio.Task[Any] | None = None
    sessionless: bool = False
    # The server's answer to the call came: a question still waiting was given up by it.
    answered: bool = False
    outcome: tuple[Any, int | None] | None = None

    async def run(self) -> None:
        try:
            await _db(self._prepare)
        except Exception:
            logger.exception("call %s: could not prepare its conversation", self.call.pk)
            self.settled.set()
            return
        talk = self.talk = asyncio.create_task(self._talk())
        heart = asyncio.create_task(self._beat(talk))
        try:
            result, status = await talk
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self.sessionless and not (current is not None and current.cancelling()):
                # Stopped by its question: nobody could ever answer it.
                await _db(fail_call, self.call, NO_SESSION, reason="no session")
                return
            if self.outcome is not None and not (current is not None and current.cancelling()):
                # The server's answer came; a question it gave up was cancelled on the way out.
                await _db(self._finished, *self.outcome)
                return
            if current is not None and current.cancelling():
                await asyncio.shield(_db(self._lost, "this mrtrweb process stopped"))
                raise
            # Stopped by the heartbeat: this process shuts down.
            await _db(self._lost, "this mrtrweb process stopped")
        except MCPError as exc:
            await _db(self._failed, exc)
        except Exception as exc:
            logger.exception("call %s: the conversation with the server broke", self.call.pk)
            await _db(self._crashed, exc)
        else:
            await _db(self._finished, result, status)
        finally:
            heart.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heart
            self.settled.set()

    # -- the exchange ------------------------------------------------------------------------

    def _prepare(self) -> None:
        call = call_to_send(self.call.pk)
        self.call = call
        connection = call.connection
        if connection.uses_oauth:
            self.authenticator = authenticator_for(connection, call.started_by)
        # Should this process die before a question or the result, the watchdog fails the
        # call; its clock (updated_at) starts now.
        call.updated_at = timezone.now()
        Call.objects.filter(pk=call.pk).update(
            updated_at=call.updated_at,
            watch_at=call.updated_at + call_stuck_after(connection),
        )

    async def _talk(self) -> tuple[Any, int | None]:
        call = self.call
        settings = call.connection.client_settings(call.credentials)
        if self.authenticator is not None:
            settings = dataclasses.replace(settings, authenticator=self.authenticator)
        progress = on_progress(call)
        deadline = float(call.connection.question_deadline)
        outcome: tuple[Any, int | None] | None = None
        try:
            async with HandshakeClient(
                settings, on_elicit=self._on_elicit, question_deadline=deadline + BACKSTOP
            ) as client:
                self.client = client
                if call.method == Call.Method.TOOL:
                    result: Any = await client.call_tool(
                        call.target, call.arguments_json, on_notification=progress
                    )
                elif call.method == Call.Method.PROMPT:
                    result = await client.get_prompt(
                        call.target, call.arguments_json, on_notification=progress
                    )
                else:
                    result = await client.read_resource(call.target, on_notification=progress)
                # Leaving the session cancels a question still waiting: the server gave it up.
                self.answered = True
                outcome = self.outcome = (result, client.last_http_status)
        except asyncio.CancelledError:
            # That question's cancellation may surface here as the session closes; the call
            # has its answer all the same, unless this task itself is being cancelled.
            current = asyncio.current_task()
            if outcome is None or (current is not None and current.cancelling()):
                raise
        assert outcome is not None
        return outcome

    async def _on_elicit(self, request: mcp_types.ElicitRequest) -> mcp_types.ElicitResult:
        """Park the question, wait for its answer (from any process), return it; "cancel"
        when the call cannot take it, at its deadline, or when this process stops."""
        if self.client is not None and self.client.session_id is None and self.talk is not None:
            # No session: the answer would reach a server that never asked, and the tool
            # would wait for it for ever. No round; the call fails and its stream is closed.
            self.sessionless = True
            asyncio.get_running_loop().call_soon(self.talk.cancel)
            return mcp_types.ElicitResult(action="cancel")
        self.asking += 1
        round_id: int | None = None
        try:
            round_id = await _db(
                park_question,
                self.call.pk,
                dump(request),
                self.owner,
                float(self.call.connection.question_deadline),
            )
            self.settled.set()
            if round_id is None:
                return mcp_types.ElicitResult(action="cancel")
            while True:
                if handoff.stopping():
                    await _db(lose, round_id, why="this mrtrweb process stopped")
                    return mcp_types.ElicitResult(action="cancel")
                answer = await _db(take, round_id, self.owner)
                if answer is not None:
                    return mcp_types.ElicitResult.model_validate(answer)
                await asyncio.sleep(POLL)
        except asyncio.CancelledError:
            # The client's backstop (or a shutdown) ended the wait: whatever the round held
            # was not sent, so it is lost, the answers kept.
            if round_id is not None and self.answered:
                await asyncio.shield(_db(withdraw, round_id))
            elif round_id is not None:
                await asyncio.shield(_db(lose, round_id, why="the question was given up"))
            raise
        finally:
            self.asking -= 1

    async def _beat(self, talk: asyncio.Task[Any]) -> None:
        """The owner's heartbeat on its open rounds; on shutdown, the call is stopped (its
        rounds lost) once a waiting question was answered "cancel"."""
        loop = asyncio.get_running_loop()
        interval = beat_interval()
        next_beat = loop.time() + interval
        stop_by: float | None = None
        while not talk.done():
            await asyncio.sleep(POLL)
            if handoff.stopping():
                # A waiting question sees it too, marks its round lost and answers "cancel":
                # that answer is given a moment to go out before the call is cut.
                stop_by = stop_by or loop.time() + STOP_GRACE
                if loop.time() >= stop_by:
                    talk.cancel()
                    return
            if loop.time() >= next_beat:
                next_beat = loop.time() + interval
                try:
                    await _db(beat, self.call.pk, self.owner)
                except Exception:
                    logger.exception("call %s: heartbeat failed", self.call.pk)

    # -- how it ended ------------------------------------------------------------------------

    def _open_rounds(self) -> list[int]:
        return list(
            Round.objects.filter(
                call_id=self.call.pk,
                carrier=Round.Carrier.STREAM,
                owner=self.owner,
                status__in=OPEN,
            ).values_list("pk", flat=True)
        )

    def _finished(self, result: Any, http_status: int | None) -> None:
        with transaction.atomic():
            settle_delivered(self.call.pk, self.owner, http_status)
            settle_result(self.call, result)

    def _failed(self, exc: MCPError) -> None:
        if isinstance(exc, JSONRPCError):
            # The server answered (with an error): what it was sent, it received.
            with transaction.atomic():
                settle_delivered(self.call.pk, self.owner, exc.http_status)
        open_rounds = self._open_rounds()
        if not open_rounds:
            settle_failure(self.call, None, exc, self.authenticator)
            return
        # An answer that could not be posted never reached the server, whatever it was
        # claimed as; anything else broke after it was sent.
        unsent = False if isinstance(exc, AnswerNotDelivered) else None
        for round_id in open_rounds:
            lose(round_id, why=str(exc)[:500], answer_sent=unsent)

    def _lost(self, why: str) -> None:
        open_rounds = self._open_rounds()
        for round_id in open_rounds:
            lose(round_id, why=why)
        if not open_rounds:
            fail_call(self.call, STOPPED, reason=why)

    def _crashed(self, exc: Exception) -> None:
        self._lost(f"{type(exc).__name__}: {str(exc)[:500]}")
