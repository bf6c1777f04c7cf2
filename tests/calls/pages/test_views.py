"""The calls pages, driven with the Django test client against real MCP peers.

Delivery runs inline at commit (ImmediateBackend + transactional tests), so a POST of answers
returns after the server has answered the retry.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from html import unescape
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.http import QueryDict
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.elicitation import field_name_for, prefix_for_key
from mrtrweb.people.roles import ADMINS
from mrtrweb.servers.models import Connection
from tests.calls.pages.client import (
    Pages,
    arg,
    buttons,
    only_call,
    start_tool,
    start_url,
    text,
    tool_calls,
    visible_text,
)
from tests.elicitation.support import controls, elements, post
from tests.factories import CallFactory, RoundFactory

# Until the project urlconf includes the calls pages, the tests mount them themselves.

pytestmark = [pytest.mark.django_db(transaction=True)]

APPROVAL = {"approve": "on", "replicas": "3", "window": "1", "notify": ["0"]}  # window: tonight


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Every test here delivers answers inline."""


def answer_data(key: str, answers: dict[str, Any], action: str = "accept") -> dict[str, Any]:
    data: QueryDict = post(prefix_for_key(key), answers)
    return {**{k: data.getlist(k) for k in data}, "action": action}


def form_buttons(response: Any) -> list[str]:
    """The buttons of the answer form (not the nav's Sign out)."""
    return [b for b in buttons(response) if b != "Sign out"]


def pending_round(call: Call) -> Round:
    return call.rounds.get(status=Round.Status.PENDING)


def label_texts(response: Any) -> list[str]:
    """Texts of labels and of legends (a radio or checkbox group is named by its legend)."""
    return [
        " ".join(el.text.split())
        for el in elements(text(response))
        if el.tag in ("label", "legend")
    ]


# -- the round page --------------------------------------------------------------------------


def test_approve_deploy_from_start_to_result(
    pages: Pages, peer_conn: Connection, fastmcp_peer: Any
):
    form = pages.get(start_url(peer_conn, tool="approve_deploy"))
    assert "Call the tool" in buttons(form)
    response = start_tool(pages, peer_conn, "approve_deploy", service="api")
    call = only_call()
    round = pending_round(call)
    assert response.status_code == 303
    assert response["Location"] == round.get_absolute_url()

    page = pages.get(round.get_absolute_url())
    body = visible_text(page)
    assert page.status_code == 200
    assert "Deploy api to staging?" in body
    assert "Test peer" in body and "mrtrweb-fastmcp-peer" in body and "approve_deploy" in body
    # Who asks, and by when: relative, then the date (in UTC, said so: no zone is known).
    assert "Asked by ada just now" in body
    assert re.search(r"Due in \d+ minutes — \d+ \w{3}, \d\d:\d\d UTC", body)
    for label in ("Approve the deployment", "Replicas", "Deployment window", "Contact e-mail"):
        assert any(label in found for found in label_texts(page)), label
    assert form_buttons(page) == ["Submit", "Decline", "Cancel"]
    assert (
        len(
            [
                el
                for el in elements(text(page))
                if el.tag == "form" and el.attrs.get("class") == "answer-form"
            ]
        )
        == 1
    )

    since = fastmcp_peer.mark()
    done = pages.post(round.get_absolute_url(), answer_data("approval", APPROVAL))
    assert done.status_code == 303
    assert done["Location"] == call.get_absolute_url()
    sent = tool_calls(fastmcp_peer, since)
    assert len(sent) == 1
    assert sent[0]["json"]["params"]["inputResponses"] == {
        "approval": {
            "action": "accept",
            "content": {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops"]},
        }
    }

    result = pages.get(call.get_absolute_url())
    body = visible_text(result)
    assert "Deployed api to staging: 3 replicas, window tonight" in body
    assert '"status": "deployed"' in unescape(text(result))  # structuredContent, pretty-printed
    assert "Outcome: Answered" in body
    assert "answered by ada" in body
    assert "Replicas 3" in body  # the answer given, labelled with the question's title
    # Choices read back by the titles the person chose, not the server's codes.
    assert "Deployment window Tonight at 22:00" in body and "Notify Operations" in body
    # The structured content as a labelled table, its JSON behind a disclosure.
    assert "Status deployed" in body and "Service api" in body
    assert re.search(r"<details class=\"raw-json\">\s*<summary>", text(result))
    # The tool's text reads as text, not code.
    assert not re.search(r"<pre[^>]*>\s*Deployed api", text(result))


def test_invalid_answers_are_shown_inline_kept_and_nothing_is_sent(
    pages: Pages, peer_conn: Connection, fastmcp_peer: Any
):
    start_tool(pages, peer_conn, "approve_deploy", service="api")
    round = pending_round(only_call())
    since = fastmcp_peer.mark()
    bad = {**APPROVAL, "replicas": "99", "reason": "no", "contact": "ops at example"}
    response = pages.post(round.get_absolute_url(), answer_data("approval", bad))

    assert response.status_code == 422
    html = text(response)
    prefix = prefix_for_key("approval")
    (replicas,) = controls(html, f"{prefix}-{field_name_for('replicas')}")
    assert replicas.attrs["value"] == "99"
    assert replicas.attrs.get("aria-invalid") == "true"
    (reason,) = controls(html, f"{prefix}-{field_name_for('reason')}")
    assert reason.attrs["value"] == "no"
    (contact,) = controls(html, f"{prefix}-{field_name_for('contact')}")
    assert contact.attrs["value"] == "ops at example"
    tonight = [
        el for el in controls(html, f"{prefix}-{field_name_for('window')}") if "checked" in el.attrs
    ]
    assert [el.attrs["value"] for el in tonight] == ["1"]
    assert "Some answers need fixing" in visible_text(response)
    assert len(re.findall(r'class="errorlist', html)) >= 3

    assert tool_calls(fastmcp_peer, since) == []
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING


def test_a_second_post_is_told_already_answered(
    pages: Pages, peer_conn: Connection, fastmcp_peer: Any
):
    start_tool(pages, peer_conn, "approve_deploy", service="api")
    round = pending_round(only_call())
    since = fastmcp_peer.mark()
    first = pages.post(round.get_absolute_url(), answer_data("approval", APPROVAL))
    second = pages.post(round.get_absolute_url(), answer_data("approval", APPROVAL))
    assert first.status_code == 303
    assert second.status_code == 409
    assert "already answered" in visible_text(second)
    assert len(tool_calls(fastmcp_peer, since)) == 1
    closed = pages.get(round.get_absolute_url())
    assert closed.status_code == 200
    assert "delivered" in visible_text(closed)
    assert form_buttons(closed) == []


@pytest.mark.parametrize(("action", "word"), [("decline", "declined"), ("cancel", "cancelled")])
def test_decline_and_cancel_send_no_content(
    pages: Pages, peer_conn: Connection, fastmcp_peer: Any, action: str, word: str
):
    start_tool(pages, peer_conn, "approve_deploy", service="api")
    call = only_call()
    round = pending_round(call)
    since = fastmcp_peer.mark()
    # Whatever was typed is not sent: declining sends no content at all.
    response = pages.post(
        round.get_absolute_url(), answer_data("approval", {"replicas": "99"}, action)
    )
    assert response.status_code == 303
    (sent,) = tool_calls(fastmcp_peer, since)
    assert sent["json"]["params"]["inputResponses"] == {"approval": {"action": action}}
    assert f"Deployment of api {word}" in visible_text(pages.get(call.get_absolute_url()))


def test_two_questions_are_two_sections_of_one_form(pages: Pages, peer_conn: Connection):
    start_tool(pages, peer_conn, "two_questions")
    call = only_call()
    round = pending_round(call)
    page = pages.get(round.get_absolute_url())
    fieldsets = [el for el in elements(text(page)) if el.tag == "fieldset"]
    assert [el.attrs["id"] for el in fieldsets if "question" in el.attrs.get("class", "")] == [
        prefix_for_key("name"),
        prefix_for_key("color"),
    ]
    assert form_buttons(page).count("Submit") == 1
    assert "Question 1 of 2" in visible_text(page)

    data = {**answer_data("name", {"name": "Bo"}), **answer_data("color", {"color": "2"})}
    pages.post(round.get_absolute_url(), data)
    assert "Bo likes blue" in visible_text(pages.get(call.get_absolute_url()))


def test_a_purchase_goes_through_two_rounds(pages: Pages, peer_conn: Connection):
    first = start_tool(pages, peer_conn, "purchase", item="lamp", quantity="2")
    call = only_call()
    shipping = pending_round(call)
    assert first["Location"] == shipping.get_absolute_url()
    response = pages.post(
        shipping.get_absolute_url(), answer_data("shipping", {"address": "1 Main St"})
    )
    # Delivered while the person waited, and the server asked again: straight to round 2.
    payment = pending_round(call)
    assert payment.index == 2
    assert response["Location"] == payment.get_absolute_url()

    page = pages.get(call.get_absolute_url())
    assert "Answer round 2" in visible_text(page)
    assert payment.get_absolute_url() in text(page)
    assert "1 Main St" in visible_text(page)  # round 1's answer

    pages.post(
        payment.get_absolute_url(), answer_data("payment", {"confirm": "on", "coupon": "X1"})
    )
    body = visible_text(pages.get(call.get_absolute_url()))
    assert "Purchased 2 x lamp, shipping to 1 Main St (express=false), coupon=X1" in body


def test_url_mode_needs_consent_before_the_link_and_never_fetches_it(
    pages: Pages, fastmcp_process_peer: Any
):
    # A real server, so a fetch of the link would reach it and be counted.
    fastmcp_peer = fastmcp_process_peer
    peer_conn = Connection.objects.create(name="peer", title="Test peer", url=fastmcp_peer.url)
    start_tool(pages, peer_conn, "url_login", provider="acme")
    call = only_call()
    round = pending_round(call)
    url = round.input_requests["login"]["params"]["url"]

    page = pages.get(round.get_absolute_url())
    html = text(page)
    body = visible_text(page)
    assert url in body
    assert "It leads to 127.0.0.1" in body
    assert "plain http" in body
    assert f'href="{url}"' not in html and "Open" not in form_buttons(page)
    assert not [el for el in elements(html) if el.tag == "a" and el.text.strip() == "Open"]
    assert form_buttons(page) == ["I agree to open this link", "Decline", "Cancel"]

    # Finishing before agreeing is refused, and sends nothing.
    since = fastmcp_peer.mark()
    early = pages.post(round.get_absolute_url(), {"action": "accept"})
    assert early.status_code == 400
    assert tool_calls(fastmcp_peer, since) == []

    agreed = pages.post(round.get_absolute_url(), {"consent": prefix_for_key("login")})
    assert agreed.status_code == 303
    page = pages.get(round.get_absolute_url())
    (link,) = [el for el in elements(text(page)) if el.tag == "a" and el.text.strip() == "Open"]
    assert link.attrs["href"] == url
    assert link.attrs["target"] == "_blank"
    assert set(link.attrs["rel"].split()) == {"noopener", "noreferrer"}
    assert form_buttons(page) == ["I've finished", "Cancel"]
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING

    done = pages.post(round.get_absolute_url(), {"action": "accept"})
    assert done.status_code == 303
    (sent,) = tool_calls(fastmcp_peer, since)
    assert sent["json"]["params"]["inputResponses"] == {"login": {"action": "accept"}}
    call.refresh_from_db()
    assert call.result["structuredContent"]["visited"] is False  # we never fetched it
    assert "Connected to acme" in visible_text(pages.get(call.get_absolute_url()))


def test_a_round_of_kinds_we_cannot_answer_offers_only_abandon(
    pages: Pages, peer_conn: Connection, fastmcp_peer: Any
):
    start_tool(pages, peer_conn, "ask_undeclared")
    call = only_call()
    round = pending_round(call)
    assert round.unsupported_reason
    page = pages.get(round.get_absolute_url())
    assert page.status_code == 200
    assert "Unsupported" in visible_text(page)
    assert form_buttons(page) == ["Abandon"]
    call_page = visible_text(pages.get(call.get_absolute_url()))
    assert "unsupported" in call_page

    since = fastmcp_peer.mark()
    refused = pages.post(round.get_absolute_url(), {"action": "decline"})
    assert refused.status_code == 409
    abandoned = pages.post(round.get_absolute_url(), {"action": "abandon"})
    assert abandoned.status_code == 303
    call.refresh_from_db()
    assert call.status == Call.Status.CANCELLED
    assert tool_calls(fastmcp_peer, since) == []


def test_a_schema_outside_the_vocabulary_is_never_half_rendered(
    pages: Pages, peer_conn: Connection, ada: Any
):
    call = CallFactory(connection=peer_conn, target="x", started_by=ada)
    good = {"type": "object", "properties": {"name": {"type": "string"}}}
    bad = {
        "type": "object",
        "properties": {"ok": {"type": "string"}, "nested": {"type": "object"}},
    }
    round = RoundFactory(
        call=call,
        input_requests={
            "good": _form_request("Your name?", good),
            "bad": _form_request("Something nested", bad),
        },
    )
    page = pages.get(round.get_absolute_url())
    html = text(page)
    assert "cannot show" in visible_text(page)
    assert controls(html, f"{prefix_for_key('bad')}-{field_name_for('ok')}") == []
    assert form_buttons(page) == ["Decline", "Cancel"]
    refused = pages.post(round.get_absolute_url(), answer_data("good", {"name": "Bo"}))
    assert refused.status_code == 400
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING


def _form_request(message: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


def test_prompts_that_ask_are_answered_and_show_their_messages(pages: Pages, peer_conn: Connection):
    response = pages.post(
        start_url(peer_conn, prompt="review_prompt"), {arg("topic"): "the lamp", "start": "1"}
    )
    call = only_call()
    round = pending_round(call)
    assert response["Location"] == round.get_absolute_url()
    assert "review_prompt" in visible_text(pages.get(round.get_absolute_url()))
    pages.post(round.get_absolute_url(), answer_data("style", {"style": "0"}))
    body = visible_text(pages.get(call.get_absolute_url()))
    assert "Write a concise review of the lamp." in body
    assert "user" in body


def test_resources_that_ask_are_answered_and_show_their_contents(
    pages: Pages, peer_conn: Connection
):
    response = pages.post(start_url(peer_conn, resource="peer://vault/secret"), {"start": "1"})
    call = only_call()
    round = pending_round(call)
    assert response["Location"] == round.get_absolute_url()
    pages.post(round.get_absolute_url(), answer_data("unlock", {"acknowledge": "on"}))
    body = visible_text(pages.get(call.get_absolute_url()))
    assert "vault contents: 42" in body
    assert "peer://vault/secret" in body


# -- the call page ---------------------------------------------------------------------------


def test_an_expired_round_can_be_started_again_with_the_answers_filled_in(
    pages: Pages, short_ttl_peer: Any, time_machine: Any
):
    conn = Connection.objects.create(name="short", url=short_ttl_peer.url)
    start_tool(pages, conn, "approve_deploy", service="api")
    call = only_call()
    round = pending_round(call)
    # The in-process peer's state lives 2 s, by the same clock.
    time_machine.move_to(timezone.now() + timedelta(seconds=2.5))
    answers = {**APPROVAL, "reason": "hotfix"}
    response = pages.post(round.get_absolute_url(), answer_data("approval", answers))
    assert response.status_code == 303
    call.refresh_from_db()
    assert call.status == Call.Status.EXPIRED

    page = pages.get(call.get_absolute_url())
    body = visible_text(page)
    assert "no longer accepts this round" in body
    assert "The answers given are kept" in body
    # The server refused it: not the words of a round that timed out unanswered.
    assert "Nobody answered in time" not in body
    assert "Start again" in buttons(page)
    assert "hotfix" in body  # the answers given are still shown

    again = pages.post(reverse("calls:restart", kwargs={"pk": call.pk}))
    new_call = Call.objects.get(restarted_from=call)
    new_round = pending_round(new_call)
    assert again.status_code == 303
    assert again["Location"] == new_round.get_absolute_url()
    html = text(pages.get(new_round.get_absolute_url()))
    prefix = prefix_for_key("approval")
    (replicas,) = controls(html, f"{prefix}-{field_name_for('replicas')}")
    assert replicas.attrs["value"] == "3"
    (reason,) = controls(html, f"{prefix}-{field_name_for('reason')}")
    assert reason.attrs["value"] == "hotfix"
    checked = [
        el.attrs["value"]
        for el in controls(html, f"{prefix}-{field_name_for('window')}")
        if "checked" in el.attrs
    ]
    assert checked == ["1"]
    assert "Started again from" in visible_text(pages.get(new_call.get_absolute_url()))


def test_a_failed_delivery_can_be_retried(pages: Pages, peer_conn: Connection, fastmcp_peer: Any):
    start_tool(pages, peer_conn, "approve_deploy", service="api")
    call = only_call()
    round = pending_round(call)
    # The server goes away before the answers are sent.
    Connection.objects.filter(pk=peer_conn.pk).update(url="http://127.0.0.1:9/mcp")
    pages.post(round.get_absolute_url(), answer_data("approval", APPROVAL))
    round.refresh_from_db()
    assert round.status == Round.Status.FAILED

    page = pages.get(call.get_absolute_url())
    assert "Retry delivery" in buttons(page)
    assert "NotDelivered" in visible_text(page)

    Connection.objects.filter(pk=peer_conn.pk).update(url=fastmcp_peer.url)
    retried = pages.post(reverse("calls:retry", kwargs={"pk": round.pk}))
    assert retried.status_code == 303
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED
    again = pages.post(reverse("calls:retry", kwargs={"pk": round.pk}))
    assert again.status_code == 409


def test_while_answers_are_on_their_way_the_page_says_so_and_listens(
    pages: Pages, peer_conn: Connection, settings: Any
):
    start_tool(pages, peer_conn, "approve_deploy", service="api")
    call = only_call()
    round = pending_round(call)
    # A queue nobody works: the answers stay submitted, as they do until a worker runs.
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    pages.post(round.get_absolute_url(), answer_data("approval", APPROVAL))
    page = pages.get(call.get_absolute_url())
    assert "Delivering your answers…" in visible_text(page)
    # The page listens on the call's websocket (mrtrweb/live, tests/live) instead of polling.
    assert f'ws-connect="/ws/calls/{call.pk}/?view=call&amp;state=' in text(page)
    assert f'id="live-progress-{call.pk}"' in text(page)
    # With JavaScript the socket updates the page; without it, the page reloads itself.
    assert text(page).count("http-equiv") == 1
    next_url = reverse("live:next", kwargs={"pk": call.pk}) + "?hold=1"
    assert f'<noscript><meta http-equiv="refresh" content="1; url={next_url}"></noscript>' in text(
        page
    )
    assert "Answer round" not in visible_text(page)
    # A reload shows the truth once the answers are delivered, and stops reloading.
    engine.resubmit(round.pk)
    delivered = pages.get(call.get_absolute_url())
    assert "Delivering your answers…" not in visible_text(delivered)
    assert "http-equiv" not in text(delivered)


def test_server_text_is_escaped_everywhere(pages: Pages, peer_conn: Connection):
    evil = "<script>alert(1)</script>"
    start_tool(pages, peer_conn, "approve_deploy", service=evil)
    call = only_call()
    round = pending_round(call)
    page = pages.get(round.get_absolute_url())
    assert evil not in text(page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text(page)
    pages.post(round.get_absolute_url(), answer_data("approval", {}, "decline"))
    result = pages.get(call.get_absolute_url())
    assert evil not in text(result)
    assert f"Deployment of {evil} declined" in visible_text(result)

    echoed = start_tool(pages, peer_conn, "echo", text=evil)
    assert evil not in text(pages.get(echoed["Location"]))
    assert "<script>alert" not in "".join(pages.bodies)


def test_a_failing_tool_is_marked_as_a_failure(pages: Pages, peer_conn: Connection):
    response = start_tool(pages, peer_conn, "fail", message="it broke")
    page = pages.get(response["Location"])
    assert "Failed: the tool reported an error" in visible_text(page)
    assert "it broke" in visible_text(page)
    assert 'class="result failure"' in text(page)


def test_the_list_shows_my_calls_only(pages: Pages, peer_conn: Connection, ada: Any):
    start_tool(pages, peer_conn, "add", a="1", b="2")
    bo = get_user_model().objects.create_user("bo", password="pw-bo-12345")
    CallFactory(connection=peer_conn, target="echo", started_by=bo)
    page = pages.get(reverse("calls:list"))
    assert "add" in visible_text(page)
    assert "echo" not in visible_text(page)


# -- who may do what -------------------------------------------------------------------------


def test_other_people_get_404_and_strangers_are_sent_to_sign_in(
    pages: Pages, peer_conn: Connection
):
    start_tool(pages, peer_conn, "approve_deploy", service="api")
    call = only_call()
    round = pending_round(call)
    urls = [
        round.get_absolute_url(),
        call.get_absolute_url(),
    ]
    bo = get_user_model().objects.create_user("bo", password="pw-bo-12345")
    other = Client()
    other.force_login(bo)
    for url in urls:
        assert other.get(url).status_code == 404, url
    assert (
        other.post(round.get_absolute_url(), answer_data("approval", APPROVAL)).status_code == 404
    )
    assert other.post(reverse("calls:restart", kwargs={"pk": call.pk})).status_code == 404
    assert other.post(reverse("calls:retry", kwargs={"pk": round.pk})).status_code == 404
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING

    stranger = Client()
    for url in [*urls, reverse("starting:pick"), reverse("calls:list")]:
        response = stranger.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))

    # Being staff is not enough: seeing everything is the Admins role.
    staff = get_user_model().objects.create_user("root", password="pw-root-123", is_staff=True)
    admin = Client()
    admin.force_login(staff)
    assert admin.get(round.get_absolute_url()).status_code == 404
    staff.groups.add(Group.objects.get(name=ADMINS))
    admin.force_login(staff)
    assert admin.get(round.get_absolute_url()).status_code == 200
    assert admin.get(call.get_absolute_url()).status_code == 200


def test_posts_need_the_csrf_token(peer_conn: Connection, ada: Any):
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(ada)
    response = guarded.post(start_url(peer_conn, tool="add"), {arg("a"): "1", arg("b"): "2"})
    assert response.status_code == 403
    assert not Call.objects.exists()

    relaxed = Client()
    relaxed.force_login(ada)
    relaxed.post(start_url(peer_conn, tool="approve_deploy"), {arg("service"): "api"})
    round = pending_round(only_call())
    refused = guarded.post(round.get_absolute_url(), answer_data("approval", APPROVAL))
    assert refused.status_code == 403
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING

    # With the token from the page, the same post goes through.
    page = guarded.get(round.get_absolute_url())
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text(page)).group(1)
    ok = guarded.post(
        round.get_absolute_url(),
        {**answer_data("approval", APPROVAL), "csrfmiddlewaretoken": token},
    )
    assert ok.status_code == 303


def test_answer_json_is_pretty_on_the_call_page_not_raw(pages: Pages, peer_conn: Connection):
    response = start_tool(pages, peer_conn, "add", a="1", b="2")
    html = text(pages.get(response["Location"]))
    assert json.dumps({"a": 1, "b": 2}, indent=2) in unescape(html)


def test_agreeing_to_a_link_keeps_what_was_typed_in_the_other_questions(
    pages: Pages, peer_conn: Connection, ada: Any
):
    call = CallFactory(connection=peer_conn, target="x", started_by=ada)
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "title": "Name"}},
        "required": ["name"],
    }
    url = "https://xn--80ak6aa92e.com/login"  # punycode
    round = RoundFactory(
        call=call,
        input_requests={
            "who": _form_request("Who are you?", schema),
            "link": {
                "method": "elicitation/create",
                "params": {"mode": "url", "message": "Sign in", "url": url},
            },
        },
    )
    page = pages.get(round.get_absolute_url())
    assert "encoded international name" in visible_text(page)
    assert form_buttons(page) == ["I agree to open this link", "Decline", "Cancel"]

    typed = {**answer_data("who", {"name": "Bo"}), "consent": prefix_for_key("link")}
    del typed["action"]
    response = pages.post(round.get_absolute_url(), typed)
    html = text(response)
    assert response.status_code == 200
    (name,) = controls(html, f"{prefix_for_key('who')}-{field_name_for('name')}")
    assert name.attrs["value"] == "Bo"
    assert "errorlist" not in html
    (link,) = [el for el in elements(html) if el.tag == "a" and el.text.strip() == "Open"]
    assert link.attrs["href"] == url
    assert form_buttons(response) == ["Submit", "Decline", "Cancel"]

    forged = pages.post(round.get_absolute_url(), {"consent": "q" + "0" * 20})
    assert forged.status_code == 400
