"""``live:next``: where a round page goes when its call moves on (access is in the matrix)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.servers.models import Connection, Routing

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
