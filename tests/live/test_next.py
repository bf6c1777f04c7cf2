"""``live:next``: where a round page goes when its call moves on (access is in the matrix),
and, held (``?hold=1``), where the call page without JavaScript goes once its call arrives."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from mrtrweb.calls import engine, handoff
from mrtrweb.calls.models import Call
from mrtrweb.live import views as live_views
from mrtrweb.live.views import HOLD_SECONDS
from mrtrweb.servers.models import Connection, Routing
from tests.calls.engine.delivery_support import DATABASE_QUEUE

pytestmark = pytest.mark.django_db(transaction=True)


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def purchase(peer: Any, caller: Any, **routing: Any) -> Call:
    conn = Connection.objects.create(name="peer", url=peer.url, **routing)
    return engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="purchase",
        arguments={"item": "lamp"},
        user=caller,
    )


def test_it_leads_to_the_round_waiting_for_me_then_to_the_result(
    people: dict[str, Any], fastmcp_peer: Any, inline_tasks: None
) -> None:
    caller = people["caller"]
    call = purchase(fastmcp_peer, caller)
    url = reverse("live:next", kwargs={"pk": call.pk})
    first = call.rounds.get(index=1)
    assert client_for(caller).get(url)["Location"] == first.get_absolute_url()

    engine.answer(first, {"shipping": {"action": "accept", "content": {"address": "x"}}}, caller)
    second = call.rounds.get(index=2)
    response = client_for(caller).get(url)
    assert response.status_code == 303
    assert response["Location"] == second.get_absolute_url()

    engine.answer(second, {"payment": {"action": "accept", "content": {"confirm": True}}}, caller)
    assert client_for(caller).get(url)["Location"] == call.get_absolute_url()


def test_someone_who_may_not_answer_is_led_to_the_call_page(
    people: dict[str, Any], fastmcp_peer: Any
) -> None:
    caller, member = people["caller"], people["member"]
    call = purchase(fastmcp_peer, caller, routing=Routing.GROUP, route_group=people["group"])
    url = reverse("live:next", kwargs={"pk": call.pk})
    # The round went to the group: the caller sees the call, the member answers.
    assert client_for(caller).get(url)["Location"] == call.get_absolute_url()
    assert client_for(member).get(url)["Location"] == call.rounds.get().get_absolute_url()
    assert client_for(people["outsider"]).get(url).status_code == 404


# -- ?hold=1: the call page's reload without JavaScript ----------------------------------------


@pytest.fixture
def unsent(people: dict[str, Any], fastmcp_peer: Any, settings: Any, monkeypatch: Any) -> Call:
    """A call started from a busy process: written, not sent yet (its request on its way)."""
    settings.TASKS = DATABASE_QUEUE
    settings.MRTRWEB_DELIVER_ON_ANSWER = True
    monkeypatch.setattr(handoff, "start", lambda work, call_id: None)
    conn = Connection.objects.create(name="peer", url=fastmcp_peer.url)
    return engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="purchase",
        arguments={"item": "lamp"},
        user=people["caller"],
        deliver_within=0,
    )


def _held(client: Client, url: str, into: dict[str, Any]) -> threading.Thread:
    def get() -> None:
        began = time.monotonic()
        into["response"] = client.get(url)
        into["took"] = time.monotonic() - began

    thread = threading.Thread(target=get)
    thread.start()
    return thread


def test_a_held_reload_lands_on_the_round_as_soon_as_the_server_asks(
    people: dict[str, Any], unsent: Call
) -> None:
    url = reverse("live:next", kwargs={"pk": unsent.pk}) + "?hold=1"
    held: dict[str, Any] = {}
    waiter = _held(client_for(people["caller"]), url, held)
    time.sleep(0.8)
    assert waiter.is_alive()  # on its way: the request waits, no page is sent back
    engine.send_call(unsent.pk)
    waiter.join(timeout=HOLD_SECONDS)
    (round,) = unsent.rounds.all()
    assert held["response"].status_code == 303
    assert held["response"]["Location"] == round.get_absolute_url()
    # Let go when the round was parked, not when the hold ran out.
    assert 0.8 <= held["took"] < HOLD_SECONDS / 2, held["took"]


def test_a_held_reload_runs_out_back_to_the_call_page(
    people: dict[str, Any], unsent: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live_views, "HOLD_SECONDS", 0.6)
    began = time.monotonic()
    response = client_for(people["caller"]).get(
        reverse("live:next", kwargs={"pk": unsent.pk}) + "?hold=1"
    )
    assert time.monotonic() - began >= 0.6
    assert response["Location"] == unsent.get_absolute_url()


def test_nothing_on_its_way_is_not_held_and_others_get_a_404_at_once(
    people: dict[str, Any], fastmcp_peer: Any
) -> None:
    caller, member = people["caller"], people["member"]
    call = purchase(fastmcp_peer, caller, routing=Routing.GROUP, route_group=people["group"])
    url = reverse("live:next", kwargs={"pk": call.pk}) + "?hold=1"
    began = time.monotonic()
    # Waiting for the group, not on its way: nothing to wait for.
    assert client_for(caller).get(url)["Location"] == call.get_absolute_url()
    assert client_for(member).get(url)["Location"] == call.rounds.get().get_absolute_url()
    assert client_for(people["outsider"]).get(url).status_code == 404
    assert time.monotonic() - began < HOLD_SECONDS / 2
