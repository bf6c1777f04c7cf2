"""The websocket consumers on the real ASGI app, with real sessions and a real MCP peer.

Every engine transition below is the engine's own, against the fastmcp peer on loopback; the
frames are what a browser receives.
"""

from __future__ import annotations

import html
import re
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Event
from mrtrweb.live import events

from .conftest import LIVE_AT, LIVE_KIND, frames_until, kinds_of, start_deploy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("layer")]

APPROVAL = {
    "approval": {
        "action": "accept",
        "content": {"approve": True, "replicas": 2, "window": "now"},
    }
}


@database_sync_to_async
def answer(call: Call, user: Any) -> None:
    engine.answer(call.rounds.get(index=1), APPROVAL, user)


async def closed_with(communicator: Any) -> int | None:
    output = await communicator.receive_output(timeout=5)
    assert output["type"] == "websocket.close", output
    return output.get("code")


# -- who may listen --------------------------------------------------------------------------


async def test_anonymous_sockets_are_closed_with_4401(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any
) -> None:
    call = await start_deploy(fastmcp_peer, people["caller"])
    assert await closed_with(await connect(None, f"/ws/calls/{call.pk}/")) == 4401
    assert await closed_with(await connect(None, "/ws/inbox/")) == 4401


async def test_people_who_may_not_see_the_call_are_closed_with_4403(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any
) -> None:
    call = await start_deploy(fastmcp_peer, people["caller"])
    assert await closed_with(await connect(people["outsider"], f"/ws/calls/{call.pk}/")) == 4403
    # A member of a group sees nothing of a call not routed to the group.
    assert await closed_with(await connect(people["member"], f"/ws/calls/{call.pk}/")) == 4403
    assert await closed_with(await connect(people["caller"], "/ws/calls/999999/")) == 4403


FOREIGN_ORIGINS = [
    "https://evil.example",
    "http://127.0.0.1:9999",  # another port of the same host
    "http://127.0.0.1",  # the default port
    "https://127.0.0.1:8000",  # another scheme
    "http://localhost:8000",
    "null",
    None,
]


@pytest.mark.parametrize("origin", FOREIGN_ORIGINS)
async def test_a_socket_from_another_origin_is_refused_at_the_handshake(
    people: dict[str, Any], fastmcp_peer: Any, origin: str | None
) -> None:
    from channels.testing.websocket import WebsocketCommunicator

    from mrtrweb.asgi import application

    from .conftest import session_cookie

    call = await start_deploy(fastmcp_peer, people["caller"])
    cookie = await database_sync_to_async(session_cookie)(people["caller"])
    for path in (f"/ws/calls/{call.pk}/", "/ws/inbox/"):
        headers = [(b"host", b"127.0.0.1:8000"), (b"cookie", cookie)]
        if origin is not None:
            headers.append((b"origin", origin.encode()))
        communicator = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await communicator.connect(timeout=5)
        assert not connected, path
    # The same person's own page, on the same port, is heard.
    own = WebsocketCommunicator(
        application,
        f"/ws/calls/{call.pk}/",
        headers=[
            (b"host", b"127.0.0.1:8000"),
            (b"origin", b"http://127.0.0.1:8000"),
            (b"cookie", cookie),
        ],
    )
    connected, _ = await own.connect(timeout=5)
    assert connected
    assert await own.receive_nothing(timeout=0.2)
    await own.disconnect()


# -- what they hear --------------------------------------------------------------------------


async def test_the_caller_hears_the_round_answered_delivered_and_the_call_completed(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any, inline_tasks: None
) -> None:
    caller = people["caller"]
    call = await start_deploy(fastmcp_peer, caller)
    socket = await connect(caller, f"/ws/calls/{call.pk}/?view=call")
    published_after = time.time()

    await answer(call, caller)  # delivered inline: the peer completes the call

    frames = await frames_until(socket, "completed")
    assert kinds_of(frames) == ["answered", "delivered", "completed"]
    for frame in frames:
        # One element per frame, swapped out of band into the page's placeholder.
        assert frame.startswith(f'<div id="live-call-{call.pk}" hidden ')
        at = float(LIVE_AT.search(frame).group(1))
        assert published_after <= at <= time.time()
        # The call page fetches itself again through its view (which checks access).
        assert f'hx-get="/calls/{call.pk}/"' in frame
        assert 'hx-select="#live-main"' in frame and 'hx-trigger="load"' in frame
        assert "hx-replace-url" not in frame


async def test_a_round_page_follows_the_call_to_its_next_step(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any, inline_tasks: None
) -> None:
    caller = people["caller"]
    call = await start_deploy(fastmcp_peer, caller)
    socket = await connect(caller, f"/ws/calls/{call.pk}/?view=round")
    await answer(call, caller)
    frames = await frames_until(socket, "completed")
    assert all(f'hx-get="/live/calls/{call.pk}/next/"' in f for f in frames)
    assert all('hx-replace-url="true"' in f for f in frames)


def socket_path(user: Any, page: str) -> str:
    """The websocket address the page at ``page`` connects to, as rendered for ``user``."""
    client = Client()
    client.force_login(user)
    response = client.get(page)
    assert response.status_code == 200
    found = re.search(r'id="live-call-socket"[^>]* ws-connect="([^"]+)"', response.text)
    assert found, "the page holds no call socket"
    return html.unescape(found.group(1))


@pytest.mark.parametrize("page", ["call", "round"])
async def test_a_page_rendered_before_a_change_catches_up_when_its_socket_opens(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any, inline_tasks: None, page: str
) -> None:
    caller = people["caller"]
    call = await start_deploy(fastmcp_peer, caller)
    round = await database_sync_to_async(call.rounds.get)()
    url = call.get_absolute_url() if page == "call" else round.get_absolute_url()
    path = await database_sync_to_async(socket_path)(caller, url)
    assert f"view={page}" in path

    # The round is answered while the page is on its way to the browser.
    await answer(call, caller)
    late = await connect(caller, path)
    assert LIVE_KIND.findall(await late.receive_from(timeout=5)) == ["completed"]

    # A page rendered now shows the truth: nothing to catch up.
    current = await connect(caller, await database_sync_to_async(socket_path)(caller, url))
    assert await current.receive_nothing(timeout=0.3)


async def test_group_members_hear_the_call_and_their_inboxes_change(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any, inline_tasks: None
) -> None:
    caller, member, outsider = people["caller"], people["member"], people["outsider"]
    member_inbox = await connect(member, "/ws/inbox/?page=/inbox/%3Fpage%3D2")
    outsider_inbox = await connect(outsider, "/ws/inbox/")
    caller_inbox = await connect(caller, "/ws/inbox/")

    call = await start_deploy(fastmcp_peer, caller, group=people["group"])
    frame = (await frames_until(member_inbox, "round_parked"))[-1]
    # A trigger that fetches the member's own inbox page (with its paging) through its view.
    assert 'hx-get="/inbox/?page=2"' in frame
    assert 'hx-select-oob="#inbox-count,#inbox-pending"' in frame
    assert "approve_deploy" not in frame and "Deploy api" not in frame
    await frames_until(caller_inbox, "round_parked")

    member_call = await connect(member, f"/ws/calls/{call.pk}/?view=round")
    await answer(call, member)
    assert kinds_of(await frames_until(member_call, "completed")) == [
        "answered",
        "delivered",
        "completed",
    ]
    assert "answered" in kinds_of(await frames_until(member_inbox, "answered"))
    caller_frame = (await frames_until(caller_inbox, "completed"))[-1]
    # Not on an inbox page: only the count in the header is fetched again.
    assert 'hx-get="/inbox/"' in caller_frame
    assert 'hx-select-oob="#inbox-count"' in caller_frame
    assert await outsider_inbox.receive_nothing(timeout=0.3)


async def test_an_event_for_many_is_one_message_each_socket_filters_by_its_person(
    connect: Any,
    people: dict[str, Any],
    fastmcp_peer: Any,
    inline_tasks: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As if the group were large and the layer sent it once: to every inbox socket.
    monkeypatch.setattr(events, "IN_MEMORY_BROADCAST_FROM", 1)
    caller, member, outsider = people["caller"], people["member"], people["outsider"]
    member_inbox = await connect(member, "/ws/inbox/?page=/inbox/")
    outsider_inbox = await connect(outsider, "/ws/inbox/")
    caller_inbox = await connect(caller, "/ws/inbox/")
    sent: list[tuple[str, dict[str, Any]]] = []
    publish = events.publish
    monkeypatch.setattr(events, "publish", lambda sends: (sent.extend(sends), publish(sends)))

    await start_deploy(fastmcp_peer, caller, group=people["group"])
    frames = await frames_until(member_inbox, "round_parked")
    assert kinds_of(frames) == ["round_parked"]
    assert 'hx-select-oob="#inbox-count,#inbox-pending"' in frames[-1]
    await frames_until(caller_inbox, "round_parked")
    # Whom it does not concern neither hears it nor is checked for it.
    assert await outsider_inbox.receive_nothing(timeout=0.3)
    # The message names the people and nothing of the change.
    parked = [m for g, m in sent if g == events.INBOX_GROUP and m["kind"] == "round_parked"]
    assert parked == [
        {
            "type": "inbox.changed",
            "kind": "round_parked",
            "at": parked[0]["at"],
            "people": ",".join(str(pk) for pk in sorted((caller.pk, member.pk))),
        }
    ]
    assert not [g for g, _ in sent if g.startswith("user.")]


async def test_a_reassigned_round_leaves_the_old_assignee_s_inbox_live(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any
) -> None:
    caller, member, outsider = people["caller"], people["member"], people["outsider"]
    call = await start_deploy(fastmcp_peer, caller, group=people["group"])
    member_inbox = await connect(member, "/ws/inbox/")
    outsider_inbox = await connect(outsider, "/ws/inbox/")
    round = await database_sync_to_async(lambda: call.rounds.get())()

    await database_sync_to_async(engine.reassign)(round, caller, user=outsider)

    # The group's members lose it, the new assignee gains it.
    assert kinds_of(await frames_until(member_inbox, "reassigned")) == ["reassigned"]
    assert kinds_of(await frames_until(outsider_inbox, "reassigned")) == ["reassigned"]


async def test_someone_who_loses_sight_of_the_call_stops_hearing_it(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any
) -> None:
    caller, member, outsider = people["caller"], people["member"], people["outsider"]
    call = await start_deploy(fastmcp_peer, caller, group=people["group"])
    socket = await connect(member, f"/ws/calls/{call.pk}/?view=call")
    round = await database_sync_to_async(lambda: call.rounds.get())()
    await database_sync_to_async(engine.reassign)(round, caller, user=outsider)
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}


async def test_the_caller_and_admins_hear_without_the_whole_rule_asked_but_others_do_not(
    connect: Any,
    people: dict[str, Any],
    fastmcp_peer: Any,
    inline_tasks: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call's starter and admins see it whatever happens to its rounds: their sockets learn
    who started the call when they open, and ask nothing more than the session before each
    frame. A member of the group a round is routed to is asked the whole rule every time.
    (The admin's session passed its second factor: the tests' sign-ins do.)"""
    from django.contrib.auth.models import Group

    from mrtrweb.live import checks
    from mrtrweb.people.roles import ADMINS

    caller, member = people["caller"], people["member"]
    admin = await database_sync_to_async(
        lambda: Group.objects.get(name=ADMINS).user_set.create(username="ada", password="x")
    )()
    asked: list[Any] = []
    whole_rule = checks.sees_calls_now

    def counted(items: list[tuple[Any, int]]) -> list[bool]:
        asked.extend(user.username for user, _ in items)
        return whole_rule(items)

    monkeypatch.setattr(checks, "sees_calls_now", counted)
    call = await start_deploy(fastmcp_peer, caller, group=people["group"])
    sockets = {
        person.username: await connect(person, f"/ws/calls/{call.pk}/?view=call")
        for person in (caller, admin, member)
    }
    await answer(call, member)
    for name, socket in sockets.items():
        heard = kinds_of(await frames_until(socket, "completed"))
        assert heard == ["answered", "delivered", "completed"], name
    assert sorted(set(asked)) == [member.username]
    assert len(asked) == 3  # the member's socket, before each of its three frames


async def test_quiet_events_send_nothing(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any
) -> None:
    caller = people["caller"]
    call = await start_deploy(fastmcp_peer, caller)
    socket = await connect(caller, f"/ws/calls/{call.pk}/?view=call")
    inbox = await connect(caller, "/ws/inbox/")
    await database_sync_to_async(engine.note)(call, "webhook_delivered", status=200)
    assert await socket.receive_nothing(timeout=0.3)
    assert await inbox.receive_nothing(timeout=0.1)
    assert await database_sync_to_async(
        Event.objects.filter(call=call, kind="webhook_delivered").exists
    )()
