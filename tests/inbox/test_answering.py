"""The person answering: who asks and by when, a claim race lost, the requester's
read-only view, outcomes in words, answers by their labels, times in the person's zone.

Everything goes through the pages with the real fastmcp peer; answers are delivered inline.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from mrtrweb.accounts.models import Preferences
from mrtrweb.accounts.timezones import COOKIE
from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.elicitation import prefix_for_key
from tests.elicitation.support import post
from tests.inbox.support import (
    APPROVERS,
    admin,
    answer_data,
    ask,
    browser,
    connection,
    person,
    state,
    text,
    to_group,
    visible_text,
)

pytestmark = pytest.mark.django_db(transaction=True)

INBOX = reverse("inbox:index")
# What bea types before she submits: every kind of field, and a server-looking string.
TYPED = {
    "approve": "on",
    "replicas": "7",
    "window": "2",  # "This weekend"
    "notify": ["0", "2"],  # Operations, QA
    "reason": "<b>ship</b> it",
}


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Answers are delivered inline."""


def named(username: str, first: str, last: str, *groups: str) -> Any:
    user = person(username, *groups)
    user.first_name, user.last_name = first, last
    user.save()
    return user


@pytest.fixture
def carl() -> Any:
    return named("carl", "Carl", "Jones")


@pytest.fixture
def ada() -> Any:
    return named("ada", "Ada", "Lovelace", APPROVERS)


@pytest.fixture
def bea() -> Any:
    return named("bea", "Bea", "Smith", APPROVERS)


# -- 1. who asks, when, through what, by when ---------------------------------------------------


def test_the_round_page_the_inbox_and_the_email_say_who_asks_and_by_when(
    fastmcp_peer: Any, carl: Any, ada: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    with django_capture_on_commit_callbacks(execute=True):
        round = ask(to_group(fastmcp_peer), carl, service="api")
    web = browser(ada)

    page = visible_text(web.get(round.get_absolute_url()))
    assert "Asked by Carl Jones just now" in page
    assert "Tool approve_deploy on to-group" in page
    assert re.search(r"Due in (9|10) minutes — \d+ \w{3}, \d\d:\d\d UTC", page), page
    # No protocol words or the server's own name for itself to someone who answers.
    assert "calls itself" not in page and "input required" not in page.lower()

    row = visible_text(web.get(INBOX))
    assert "Asked by Carl Jones just now · Tool approve_deploy on to-group" in row
    assert re.search(r"due in (9|10) minutes — \d+ \w{3}, \d\d:\d\d UTC", row)

    message = next(m for m in mail.outbox if "ada@example.test" in m.to)
    assert message.subject.startswith("[mrtrweb] Carl Jones asks: Deploy api to staging?")
    assert "Carl Jones started tool approve_deploy on to-group" in message.body
    assert re.search(r"Answer before \d+ \w{3} \d{4}, \d\d:\d\d UTC \(10 minutes", message.body)


def test_the_call_page_breadcrumb_says_my_calls_only_to_the_caller(
    fastmcp_peer: Any, carl: Any, ada: Any
) -> None:
    round = ask(to_group(fastmcp_peer), carl)
    url = round.call.get_absolute_url()

    def crumb(user: Any) -> str:
        found = re.search(
            r'<p class="crumbs"><a href="([^"]*)">([^<]*)</a>', text(browser(user).get(url))
        )
        assert found
        return f"{found[2]} {found[1]}"

    assert crumb(carl) == "My calls /calls/"
    assert crumb(ada) == f"Inbox {INBOX}"
    assert crumb(admin()) == f"Dashboard {reverse('dashboard:rounds')}"


# -- 2. a claim race lost is not a dead end ---------------------------------------------------


def test_a_member_who_loses_the_claim_race_is_told_who_took_it_and_keeps_what_they_typed(
    fastmcp_peer: Any, carl: Any, ada: Any, bea: Any
) -> None:
    round = ask(to_group(fastmcp_peer), carl, service="api")
    ada_web, bea_web = browser(ada), browser(bea)
    # Both open the round; bea types while ada claims it.
    assert 'value="accept"' in text(bea_web.get(round.get_absolute_url()))
    assert ada_web.post(reverse("calls:claim", args=[round.pk])).status_code == 303
    before = state()

    lost = bea_web.post(round.get_absolute_url(), answer_data(TYPED))
    assert lost.status_code == 409
    shown = visible_text(lost)
    assert "Ada Lovelace took this round" in shown
    assert "Ada Lovelace took it just now" in shown
    assert "Your answers were not sent; what you typed is below" in shown
    # Every value typed, read back by its label; choices by their titles, nothing dropped.
    for label, value in (
        ("Approve the deployment", "yes"),
        ("Replicas", "7"),
        ("Deployment window", "This weekend"),
        ("Notify", "Operations, QA"),
        ("Reason", "<b>ship</b> it"),
    ):
        assert f"{label} {value}" in shown, label
    body = text(lost)
    assert "<b>ship</b>" not in body and "&lt;b&gt;ship&lt;/b&gt; it" in body
    # Read-only: no field to type in, no button to send; ways onwards.
    assert 'name="action"' not in body
    assert f'href="{INBOX}"' in body
    # bea may not see carl's call (the round is no longer hers): no link to it.
    assert f'href="{round.call.get_absolute_url()}"' not in body
    assert state() == before

    # The email's link, followed later, says the same (without anything typed).
    later = bea_web.get(round.get_absolute_url())
    assert later.status_code == 200
    assert "Ada Lovelace took this round" in visible_text(later)
    assert "What you typed" not in visible_text(later)


def test_a_member_whose_round_was_answered_meanwhile_is_told_by_whom(
    fastmcp_peer: Any, carl: Any, ada: Any, bea: Any
) -> None:
    round = ask(to_group(fastmcp_peer), carl, service="api")
    bea_web = browser(bea)
    bea_web.get(round.get_absolute_url())
    assert browser(ada).post(round.get_absolute_url(), answer_data()).status_code == 303

    lost = bea_web.post(round.get_absolute_url(), answer_data(TYPED))
    assert lost.status_code == 409
    shown = visible_text(lost)
    assert "Already answered by Ada Lovelace" in shown
    assert "Ada Lovelace answered it just now" in shown
    assert "Deployment window This weekend" in shown
    round.refresh_from_db()
    assert round.answered_by == ada


def test_strangers_still_get_a_404_that_reveals_nothing(
    fastmcp_peer: Any, carl: Any, ada: Any
) -> None:
    round = ask(to_group(fastmcp_peer), carl)
    browser(ada).post(reverse("calls:claim", args=[round.pk]))
    stranger = browser(person("zed"))
    assert stranger.get(round.get_absolute_url()).status_code == 404
    assert stranger.post(round.get_absolute_url(), answer_data()).status_code == 404
    assert stranger.post(reverse("calls:claim", args=[round.pk])).status_code == 404


# -- 4. the requester sees their routed round read-only ----------------------------------------


def test_the_caller_sees_a_round_routed_to_a_group_read_only_with_whom_it_waits_for(
    fastmcp_peer: Any, carl: Any, ada: Any
) -> None:
    round = ask(to_group(fastmcp_peer), carl, service="api")
    web = browser(carl)
    page = web.get(round.get_absolute_url())
    body, shown = text(page), visible_text(page)
    assert "Waiting for an answer" in shown
    assert "This round waits for the group Approvers (nobody has taken it yet)" in shown
    assert "Deploy api to staging?" in shown
    # The question's fields and choices by their labels, but nothing to fill in or press.
    assert "Deployment window: Right now, Tonight at 22:00, This weekend (required)" in shown
    assert "<form" not in body.split('id="live-main"', 1)[1]
    assert "Decline and Cancel send no answers" not in shown

    browser(ada).post(reverse("calls:claim", args=[round.pk]))
    assert "(Ada Lovelace took it just now" in visible_text(web.get(round.get_absolute_url()))


# -- 5. outcomes people understand -------------------------------------------------------------


def finish(round: Round, who: Any, action: str) -> Call:
    assert (
        browser(who).post(round.get_absolute_url(), answer_data(action=action)).status_code == 303
    )
    return Call.objects.get(pk=round.call_id)


def test_every_outcome_has_its_own_badge_in_the_lists_and_on_the_call_page(
    fastmcp_peer: Any, ada: Any
) -> None:
    conn = connection(fastmcp_peer)
    answered = finish(ask(conn, ada, service="a"), ada, "accept")
    declined = finish(ask(conn, ada, service="b"), ada, "decline")
    cancelled = finish(ask(conn, ada, service="c"), ada, "cancel")
    expired_round = ask(conn, ada, service="d")
    engine.expire(expired_round, None)
    tool_error = engine.start_call(
        connection=conn, method=Call.Method.TOOL, target="fail", arguments={}, user=ada
    )
    plain = engine.start_call(
        connection=conn, method=Call.Method.TOOL, target="echo", arguments={"text": "hi"}, user=ada
    )
    failed = engine.start_call(
        connection=connection(None, "gone"),
        method=Call.Method.TOOL,
        target="echo",
        arguments={"text": "hi"},
        user=ada,
    )
    waiting = ask(conn, ada, service="e").call
    expected = {
        answered.pk: "answered",
        declined.pk: "declined",
        cancelled.pk: "cancelled",
        expired_round.call_id: "expired",
        tool_error.pk: "tool_error",
        plain.pk: "completed",
        failed.pk: "failed",
        waiting.pk: "waiting",
    }
    web = browser(ada)
    listed = text(web.get(reverse("calls:list")))
    assert '<th scope="col">Outcome</th>' in listed
    rows = dict(re.findall(r'<a href="/calls/(\d+)/">\d+</a>.*?outcome-(\w+)', listed, re.S))
    assert {int(pk): key for pk, key in rows.items()} == expected
    history = text(web.get(reverse("inbox:history")))
    started = dict(re.findall(r'href="/calls/(\d+)/">Call \d+</a>.*?outcome-(\w+)', history, re.S))
    assert {int(pk): key for pk, key in started.items()} == expected
    labels = {
        "answered": "Answered",
        "declined": "Declined",
        "cancelled": "Cancelled",
        "expired": "Expired",
        "tool_error": "Tool error",
        "completed": "Completed",
        "failed": "Failed",
        "waiting": "Waiting for an answer",
    }
    for pk, key in expected.items():
        page = visible_text(web.get(reverse("calls:call", args=[pk])))
        assert f"Outcome: {labels[key]}" in page, (key, page)


def test_a_round_expired_by_our_own_timer_never_blames_the_server(
    fastmcp_peer: Any, ada: Any
) -> None:
    round = ask(connection(fastmcp_peer), ada)
    Round.objects.filter(pk=round.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    engine.expire(Round.objects.get(pk=round.pk), None)
    shown = visible_text(browser(ada).get(round.call.get_absolute_url()))
    assert "Nobody answered in time" in shown
    assert "nothing was sent to the server" in shown
    assert "refused" not in shown and "state" not in shown
    assert "kept" not in shown  # nothing was answered, so no "your answers are kept"


# -- 6. answers by their labels ----------------------------------------------------------------


def test_answers_are_shown_by_the_labels_people_chose(fastmcp_peer: Any, ada: Any) -> None:
    call = engine.start_call(
        connection=connection(fastmcp_peer),
        method=Call.Method.TOOL,
        target="all_field_kinds",
        arguments={},
        user=ada,
    )
    round = call.rounds.get()
    (key,) = round.input_requests
    answers = {
        "text": "hello",
        "count": "3",
        "agree": "on",
        "size": "1",  # medium (untitled: the value is the label)
        "color": "1",  # Green (oneOf const+title)
        "legacy": "0",  # Option A (enum + enumNames)
        "toppings": ["0"],
        "days": ["0", "1"],  # Monday, Tuesday (anyOf const+title)
    }
    data = post(prefix_for_key(key), answers)
    response = browser(ada).post(
        round.get_absolute_url(), {**{k: data.getlist(k) for k in data}, "action": "accept"}
    )
    assert response.status_code == 303, visible_text(response)
    page = browser(ada).get(call.get_absolute_url())
    answered = re.search(r'<dl class="answers">(.*?)</dl>', text(page), re.S)
    assert answered
    shown = " ".join(re.sub(r"<[^>]+>", " ", answered[1]).split())
    assert "color Green" in shown and "#0f0" not in shown
    assert "legacy Option A" in shown
    assert "days Monday, Tuesday" in shown and "mon" not in shown.split()
    assert "size medium" in shown


# -- 3. times in the person's own zone ----------------------------------------------------------


def deadline_text(web: Any, round: Round) -> str:
    found = re.search(
        r'<p class="deadline[^"]*">(.*?)</p>', text(web.get(round.get_absolute_url())), re.S
    )
    assert found
    return " ".join(re.sub(r"<[^>]+>", " ", found[1]).split())


def local(round: Round, zone: str) -> str:
    from zoneinfo import ZoneInfo

    assert round.expires_at
    return round.expires_at.astimezone(ZoneInfo(zone)).strftime("%H:%M")


def test_times_follow_the_browser_zone_else_say_utc_and_the_account_setting_wins(
    fastmcp_peer: Any, ada: Any
) -> None:
    round = ask(connection(fastmcp_peer), ada)
    web = browser(ada)
    # The account page is a person's own: nobody signed out reaches it.
    anonymous = browser().get(reverse("account:settings"))
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]

    shown = deadline_text(web, round)
    assert f"{local(round, 'UTC')} UTC" in shown and "set your time zone" in shown

    web.cookies[COOKIE] = "Asia/Tokyo"
    shown = deadline_text(web, round)
    assert local(round, "Asia/Tokyo") in shown and "UTC" not in shown
    assert 'title="' in text(web.get(round.get_absolute_url()))

    # A cookie is the browser's to write: anything but a zone name is ignored.
    web.cookies[COOKIE] = "../../etc/passwd"
    assert f"{local(round, 'UTC')} UTC" in deadline_text(web, round)

    # The account page's choice wins over the browser's.
    web.cookies[COOKIE] = "Asia/Tokyo"
    account = web.get(reverse("account:settings"))
    assert "Automatic: your browser's (Asia/Tokyo)" in visible_text(account)
    saved = web.post(reverse("account:settings"), {"time_zone": "America/New_York"})
    assert saved.status_code == 303
    assert Preferences.objects.get(user=ada).time_zone == "America/New_York"
    assert local(round, "America/New_York") in deadline_text(web, round)
    assert "Times are shown in America/New_York (chosen here)" in visible_text(
        web.get(reverse("account:settings"))
    )
    # A new session of the same person reads it at sign-in.
    assert local(round, "America/New_York") in deadline_text(browser(ada), round)

    # Back to automatic.
    web.post(reverse("account:settings"), {"time_zone": ""})
    assert local(round, "Asia/Tokyo") in deadline_text(web, round)
    refused = web.post(reverse("account:settings"), {"time_zone": "Mars/Olympus"})
    assert refused.status_code == 200 and "Select a valid choice" in visible_text(refused)
