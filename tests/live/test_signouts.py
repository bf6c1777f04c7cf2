"""Sockets stop when their person may no longer listen (mrtrweb/live/signouts.py and
``consumers.PersonSocket``): signing out, a session flushed, deleted or expired, a person
deactivated or their password changed. Closed with 4401, and nothing is sent after.

The sockets are real (the whole ASGI app, the session cookie of a real sign-in), the calls are
the fastmcp peer's, and the events that should no longer reach them are the engine's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import re
from importlib import import_module
from typing import Any
from urllib.parse import urlsplit

import pytest
from channels.db import database_sync_to_async
from channels.testing.websocket import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.live import consumers, events

from .conftest import HOST, ORIGIN, frames_until, kinds_of, start_deploy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("layer")]

CLOSED = {"type": "websocket.close", "code": 4401}


class Browser:
    """One browser of one person: a session signed in through Django's login, its sockets."""

    def __init__(self, user: Any) -> None:
        self.client = Client()
        self.client.force_login(user)
        self.sockets: list[WebsocketCommunicator] = []

    @property
    def session_key(self) -> str:
        return str(self.client.cookies[settings.SESSION_COOKIE_NAME].value)

    async def connect(self, path: str) -> WebsocketCommunicator:
        """A socket at ``path`` with this browser's cookie, past its handshake."""
        from mrtrweb.asgi import application

        cookie = f"{settings.SESSION_COOKIE_NAME}={self.session_key}".encode()
        socket = WebsocketCommunicator(
            application, path, headers=[HOST, ORIGIN, (b"cookie", cookie)]
        )
        self.sockets.append(socket)
        connected, _ = await socket.connect(timeout=5)
        assert connected
        return socket

    async def open(self, path: str) -> WebsocketCommunicator:
        """A socket at ``path`` that listens (not closed at once)."""
        socket = await self.connect(path)
        assert await socket.receive_nothing(timeout=0.1), "closed at once"
        return socket

    async def close(self) -> None:
        for socket in self.sockets:
            # The server closed it already, or the test's loop moved on.
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await socket.disconnect(timeout=2)


@pytest.fixture
async def browsers() -> Any:
    opened: list[Browser] = []

    async def new(user: Any) -> Browser:
        browser = await database_sync_to_async(Browser)(user)
        opened.append(browser)
        return browser

    yield new
    for browser in opened:
        await browser.close()


async def watching(browser: Browser, call: Call) -> list[WebsocketCommunicator]:
    """The call page's socket and the inbox's, as every page of the call holds them."""
    return [
        await browser.open(f"/ws/calls/{call.pk}/?view=call"),
        await browser.open("/ws/inbox/"),
    ]


@database_sync_to_async
def move_round(call: Call, to: Any) -> None:
    """An event that reaches the caller's call socket and inbox: the round reassigned."""
    engine.reassign(call.rounds.get(), call.started_by, user=to)


async def assert_closed_and_deaf(sockets: list[WebsocketCommunicator], call: Call, to: Any) -> None:
    for socket in sockets:
        assert await socket.receive_output(timeout=5) == CLOSED
    await move_round(call, to)
    for socket in sockets:
        assert await socket.receive_nothing(timeout=0.3), "a closed socket was sent something"


async def assert_hears(sockets: list[WebsocketCommunicator], kind: str = "reassigned") -> None:
    for socket in sockets:
        assert kinds_of(await frames_until(socket, kind)) == [kind]


# -- signing out and sessions ----------------------------------------------------------------


async def test_signing_out_closes_that_session_s_sockets_only(
    browsers: Any, people: dict[str, Any], fastmcp_peer: Any
) -> None:
    caller = people["caller"]
    call = await start_deploy(fastmcp_peer, caller)
    laptop, phone = await browsers(caller), await browsers(caller)
    on_laptop, on_phone = await watching(laptop, call), await watching(phone, call)

    # The real sign-out view, as the "Sign out" button posts it.
    signed_out = await database_sync_to_async(laptop.client.post)(reverse("logout"))
    assert signed_out.status_code == 302

    await assert_closed_and_deaf(on_laptop, call, people["outsider"])
    # The same person's other browser goes on hearing.
    await assert_hears(on_phone)
    # And a socket opened with the old cookie now is closed at once.
    late = await laptop.connect("/ws/inbox/")
    assert await late.receive_output(timeout=5) == CLOSED


def store(session_key: str) -> Any:
    return import_module(settings.SESSION_ENGINE).SessionStore(session_key)


def flush(key: str) -> None:
    store(key).flush()


def delete_row(key: str) -> None:
    # As an admin or a script removing sessions would.
    Session.objects.filter(session_key=key).delete()


def cycle_key(key: str) -> None:
    # What signing in again and changing one's password do to the session: a new key, the
    # old one deleted.
    session = store(key)
    session.load()
    session.cycle_key()


def expire_and_clear(key: str) -> None:
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() - datetime.timedelta(seconds=1)
    )
    call_command("clearsessions")


@pytest.mark.parametrize("end", [flush, delete_row, cycle_key, expire_and_clear])
async def test_a_session_that_ends_closes_its_sockets(
    browsers: Any, people: dict[str, Any], fastmcp_peer: Any, end: Any
) -> None:
    caller = people["caller"]
    call = await start_deploy(fastmcp_peer, caller)
    browser = await browsers(caller)
    sockets = await watching(browser, call)
    await database_sync_to_async(end)(browser.session_key)
    await assert_closed_and_deaf(sockets, call, people["outsider"])


# -- what no signal announces: found out before the next thing is sent -------------------------


def expire(user: Any, key: str) -> None:
    # Past its age: nothing deletes it until clearsessions runs.
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() - datetime.timedelta(seconds=1)
    )


def deactivate_in_bulk(user: Any, key: str) -> None:
    # update() sends no signal.
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)


def set_password_in_a_script(user: Any, key: str) -> None:
    # As a script or the shell may (the pages end the other sessions at once): this session's
    # hash is stale.
    user = get_user_model().objects.get(pk=user.pk)
    user.set_password("a-new-password-1")
    user.save()


@pytest.mark.parametrize("change", [expire, deactivate_in_bulk, set_password_in_a_script])
async def test_a_change_no_signal_announces_closes_the_socket_at_the_next_event(
    browsers: Any, people: dict[str, Any], fastmcp_peer: Any, change: Any
) -> None:
    caller = people["caller"]
    call = await start_deploy(fastmcp_peer, caller)
    browser = await browsers(caller)
    sockets = await watching(browser, call)
    await database_sync_to_async(change)(caller, browser.session_key)
    for socket in sockets:
        assert await socket.receive_nothing(timeout=0.2)  # nothing told it yet

    await move_round(call, people["outsider"])
    for socket in sockets:
        # Closed, and the event's frame was never sent.
        assert await socket.receive_output(timeout=5) == CLOSED
        assert await socket.receive_nothing(timeout=0.2)


# -- a new password ------------------------------------------------------------------------------

NEW_PASSWORD = "a-new-long-password-42"


async def test_changing_ones_password_ends_the_other_sessions_at_once(
    browsers: Any, people: dict[str, Any], fastmcp_peer: Any
) -> None:
    caller = people["caller"]
    call = await start_deploy(fastmcp_peer, caller)
    laptop, phone, others = (
        await browsers(caller),
        await browsers(caller),
        await browsers(people["outsider"]),
    )
    on_phone = await watching(phone, call)
    outsider_inbox = await others.open("/ws/inbox/")
    phone_key = phone.session_key

    # The real page, as the person submits it on their laptop.
    changed = await database_sync_to_async(laptop.client.post)(
        reverse("password_change"),
        {"old_password": "x", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert changed.status_code == 302 and changed["Location"] == reverse("password_change_done")

    # The phone's sockets close now, not at the next thing they would be sent.
    for socket in on_phone:
        assert await socket.receive_output(timeout=5) == CLOSED
    assert await outsider_inbox.receive_nothing(timeout=0.2)  # another person's stays open
    assert not await database_sync_to_async(Session.objects.filter(pk=phone_key).exists)()
    signed_out = await database_sync_to_async(phone.client.get)(reverse("password_change_done"))
    assert signed_out.status_code == 302 and reverse("login") in signed_out["Location"]
    # The laptop stays signed in, and its sockets hear on.
    still_in = await database_sync_to_async(laptop.client.get)(reverse("password_change_done"))
    assert still_in.status_code == 200
    laptop_inbox = await laptop.open("/ws/inbox/")
    await move_round(call, people["outsider"])
    await assert_hears([laptop_inbox])


async def test_a_password_set_by_email_ends_every_session_at_once(
    browsers: Any, people: dict[str, Any], fastmcp_peer: Any, settings: Any
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    caller = people["caller"]
    caller.email = "cal@example.org"
    await database_sync_to_async(caller.save)()
    call = await start_deploy(fastmcp_peer, caller)
    laptop, phone = await browsers(caller), await browsers(caller)
    sockets = [*await watching(laptop, call), *await watching(phone, call)]

    def reset() -> None:
        anyone = Client()
        asked = anyone.post(reverse("password_reset"), {"email": "cal@example.org"})
        assert asked.status_code == 302
        [link] = re.findall(r"https?://\S+", mail.outbox[-1].body)
        form = anyone.get(urlsplit(link).path, follow=True)
        done = anyone.post(
            form.redirect_chain[-1][0],
            {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
        )
        assert done.status_code == 302 and done["Location"] == reverse("password_reset_complete")

    await database_sync_to_async(reset)()
    for socket in sockets:
        assert await socket.receive_output(timeout=5) == CLOSED
    keys = [laptop.session_key, phone.session_key]
    assert not await database_sync_to_async(Session.objects.filter(pk__in=keys).exists)()


async def test_progress_stops_with_the_session(
    browsers: Any, people: dict[str, Any], fastmcp_peer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumers, "PROGRESS_RECHECK", 0.0)  # checked on every message
    caller = people["caller"]
    call = await start_deploy(fastmcp_peer, caller)
    browser = await browsers(caller)
    socket = await browser.open(f"/ws/calls/{call.pk}/?view=call")
    progress = {"type": "call.progress", "call_id": call.pk, "progress": 1.0, "at": 1.0}

    await events.apublish([(events.call_group(call.pk), progress)])
    assert 'data-live-kind="progress"' in await socket.receive_from(timeout=5)

    await database_sync_to_async(expire)(caller, browser.session_key)
    await events.apublish([(events.call_group(call.pk), {**progress, "message": "secret"})])
    assert await socket.receive_output(timeout=5) == CLOSED
    assert await socket.receive_nothing(timeout=0.2)


# -- deactivation ----------------------------------------------------------------------------


def deactivate_with_orm(user: Any, admin: Any) -> None:
    user = get_user_model().objects.get(pk=user.pk)
    user.is_active = False
    user.save()


def deactivate_in_the_admin(user: Any, admin: Any) -> None:
    """The admin's change form for the user, posted with "Active" unticked."""
    client = Client()
    client.force_login(admin)
    url = reverse("admin:auth_user_change", args=[user.pk])
    posted = client.post(
        url,
        {
            "username": user.username,
            "first_name": "",
            "last_name": "",
            "email": "",
            "groups": [g.pk for g in user.groups.all()],
            "date_joined_0": "2024-01-01",
            "date_joined_1": "00:00:00",
            "_save": "Save",
        },
    )
    assert posted.status_code == 302, posted.content[:2000]
    assert not get_user_model().objects.get(pk=user.pk).is_active


@pytest.mark.parametrize("deactivate", [deactivate_with_orm, deactivate_in_the_admin])
async def test_a_deactivated_person_s_sockets_all_close(
    browsers: Any, people: dict[str, Any], fastmcp_peer: Any, deactivate: Any
) -> None:
    member, caller = people["member"], people["caller"]
    admin = await database_sync_to_async(get_user_model().objects.create_superuser)(
        "root", password="x"
    )
    call = await start_deploy(fastmcp_peer, caller, group=people["group"])
    laptop, phone, callers = await browsers(member), await browsers(member), await browsers(caller)
    sockets = [*await watching(laptop, call), await phone.open("/ws/inbox/")]
    caller_inbox = await callers.open("/ws/inbox/")

    await database_sync_to_async(deactivate)(member, admin)

    await assert_closed_and_deaf(sockets, call, people["outsider"])
    await assert_hears([caller_inbox])  # others are not touched


async def test_a_deactivated_person_cannot_open_a_socket_with_their_old_cookie(
    browsers: Any, people: dict[str, Any], fastmcp_peer: Any
) -> None:
    caller = people["caller"]
    call = await start_deploy(fastmcp_peer, caller)
    browser = await browsers(caller)
    await database_sync_to_async(get_user_model().objects.filter(pk=caller.pk).update)(
        is_active=False
    )
    for path in (f"/ws/calls/{call.pk}/", "/ws/inbox/"):
        socket = await browser.connect(path)
        assert await socket.receive_output(timeout=5) == CLOSED


# -- the second factor ------------------------------------------------------------------------


async def test_a_session_that_owes_its_second_factor_hears_nothing(
    browsers: Any, people: dict[str, Any], fastmcp_peer: Any
) -> None:
    """An operator who typed the password but not yet the code sees no page but the code's;
    their sockets are refused the same way, until the code is given."""
    from django.contrib.auth.models import Group

    from mrtrweb.people.roles import OPERATORS
    from tests.support.second_factor import verify_client

    caller = people["caller"]
    await database_sync_to_async(lambda: caller.groups.add(Group.objects.get(name=OPERATORS)))()
    call = await start_deploy(fastmcp_peer, caller)

    def password_only() -> Browser:
        browser = Browser.__new__(Browser)
        browser.client, browser.sockets = Client(), []
        browser.client.force_login(caller, verified=False)
        return browser

    browser = await database_sync_to_async(password_only)()
    try:
        for path in (f"/ws/calls/{call.pk}/?view=call", "/ws/inbox/"):
            socket = await browser.connect(path)
            assert await socket.receive_output(timeout=5) == CLOSED

        # Once the session passed its code, the same cookie listens.
        await database_sync_to_async(verify_client)(browser.client, caller)
        sockets = await watching(browser, call)
        await move_round(call, people["outsider"])
        await assert_hears(sockets)
    finally:
        await browser.close()
