"""The inbox: pending rounds routed to me or my groups, claiming, paging, and query counts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection as db_connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from mrtrweb.calls.models import Round
from tests.inbox.support import (
    APPROVERS,
    ask,
    browser,
    connection,
    copies_of,
    person,
    round_links,
    state,
    text,
    to_group,
    to_user,
    visible_text,
)

pytestmark = pytest.mark.django_db

INBOX = reverse("inbox:index")


def htmx(target: str) -> dict[str, str]:
    return {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": target}


@pytest.fixture
def ada() -> Any:
    return person("ada", APPROVERS)


@pytest.fixture
def bea() -> Any:
    return person("bea", APPROVERS)


def test_my_rounds_and_my_groups_rounds_newest_first_with_what_is_asked(
    fastmcp_peer: Any, ada: Any, bea: Any
) -> None:
    carl = person("carl")
    mine = ask(connection(fastmcp_peer), ada, service="web")
    for_group = ask(to_group(fastmcp_peer), carl, service="api")
    not_mine = ask(to_user(fastmcp_peer, carl), ada, service="db")

    page = browser(ada).get(INBOX)
    assert page.status_code == 200
    body = text(page)
    assert body.index(f"/rounds/{for_group.pk}/") < body.index(f"/rounds/{mine.pk}/")
    assert round_links(page) == {mine.pk, for_group.pk}
    assert not_mine.pk not in round_links(page)
    shown = visible_text(page)
    assert "Deploy api to staging?" in shown and "Deploy web to staging?" in shown
    assert "Tool approve_deploy on to-group server" in shown
    assert "Tool approve_deploy on peer server" in shown
    # Who asks and when, through what, and by when.
    assert "Asked by carl just now" in shown and "Asked by ada just now" in shown
    assert "due in 9 minutes" in shown or "due in 10 minutes" in shown
    assert f'datetime="{for_group.expires_at.isoformat()}"' in body
    assert "For the group Approvers" in shown
    # One Claim button: the group's round; a round of my own needs no claiming.
    assert shown.count("Claim") == 1
    assert f'action="/rounds/{for_group.pk}/claim/"' in body
    # The header counts both.
    assert 'aria-label="2 waiting"' in body


def test_a_claimed_round_leaves_the_other_members_inboxes(
    fastmcp_peer: Any, ada: Any, bea: Any
) -> None:
    round = ask(to_group(fastmcp_peer), person("carl"))
    ada_web, bea_web = browser(ada), browser(bea)
    assert round.pk in round_links(bea_web.get(INBOX))

    claimed = ada_web.post(reverse("calls:claim", args=[round.pk]), {"next": INBOX})
    assert (claimed.status_code, claimed["Location"]) == (303, INBOX)
    round.refresh_from_db()
    assert round.claimed_by == ada and round.is_pending

    mine = ada_web.get(INBOX)
    assert round.pk in round_links(mine)
    assert "Claimed by you" in visible_text(mine)
    assert f"/rounds/{round.pk}/claim/" not in text(mine)
    theirs = bea_web.get(INBOX)
    assert round.pk not in round_links(theirs)
    assert 'aria-label="0 waiting"' in text(theirs)
    taken = bea_web.get(round.get_absolute_url())
    assert taken.status_code == 200 and "ada took this round" in visible_text(taken)


def test_claiming_with_htmx_swaps_just_the_list(fastmcp_peer: Any, ada: Any) -> None:
    round = ask(to_group(fastmcp_peer), person("carl"))
    response = browser(ada).post(
        reverse("calls:claim", args=[round.pk]),
        {"next": INBOX},
        follow=True,
        **htmx("inbox-pending"),
    )
    body = text(response)
    assert response.status_code == 200
    assert body.lstrip().startswith('<section id="inbox-pending"')
    assert "<html" not in body
    assert "Claimed by you" in visible_text(response)


def test_a_claim_never_redirects_off_site(fastmcp_peer: Any, ada: Any) -> None:
    round = ask(to_group(fastmcp_peer), person("carl"))
    response = browser(ada).post(
        reverse("calls:claim", args=[round.pk]), {"next": "https://evil.example/inbox/"}
    )
    assert response["Location"] == round.get_absolute_url()


def test_pages_of_25_newest_first_with_plain_links_and_an_htmx_partial(
    fastmcp_peer: Any, ada: Any
) -> None:
    first = ask(connection(fastmcp_peer), ada)
    now = timezone.now()
    rounds = [first, *copies_of(first, 29)]
    for age, round in enumerate(rounds):
        Round.objects.filter(pk=round.pk).update(created_at=now - timedelta(minutes=age))
    newest_first = [r.pk for r in rounds]
    web = browser(ada)

    page1 = web.get(INBOX)
    body = text(page1)
    assert [pk for pk in newest_first if f"/rounds/{pk}/" in body] == newest_first[:25]
    assert sorted(round_links(page1)) == sorted(newest_first[:25])
    assert "Page 1 of 2" in visible_text(page1)
    assert 'href="/inbox/?page=2"' in body and 'hx-get="/inbox/?page=2"' in body
    assert "30 waiting" in visible_text(page1)

    page2 = web.get(INBOX, {"page": 2})
    assert sorted(round_links(page2)) == sorted(newest_first[25:])
    # Digits our links never write ask for no page: the first, as for any other junk.
    for junk in ("²", "\u0662", "abc", "99999999999999999999"):  # \u0662: Arabic-Indic 2
        assert round_links(web.get(INBOX, {"page": junk})) == round_links(page1), junk
    assert "<html" in text(page2)  # a whole page without JavaScript
    partial = web.get(INBOX, {"page": 2}, **htmx("inbox-pending"))
    assert "<html" not in text(partial)
    assert round_links(partial) == round_links(page2)
    assert "HX-Request" in partial["Vary"]
    # Nonsense page numbers fall back to a real page rather than failing.
    assert round_links(web.get(INBOX, {"page": "x"})) == round_links(page1)
    assert round_links(web.get(INBOX, {"page": 99})) == round_links(page2)


def test_unsupported_rounds_are_listed_with_a_marker(fastmcp_peer: Any, ada: Any) -> None:
    from mrtrweb.calls import engine
    from mrtrweb.calls.models import Call

    call = engine.start_call(
        connection=connection(fastmcp_peer),
        method=Call.Method.TOOL,
        target="ask_undeclared",
        arguments={},
        user=ada,
    )
    round = call.rounds.get()
    assert round.unsupported_reason
    page = browser(ada).get(INBOX)
    assert round.pk in round_links(page)
    assert "Unsupported: can only be abandoned" in visible_text(page)


def test_the_inbox_costs_the_same_queries_for_3_rounds_or_25(
    fastmcp_peer: Any, ada: Any, bea: Any
) -> None:
    carl = person("carl")
    own = ask(connection(fastmcp_peer), ada)
    grouped = ask(to_group(fastmcp_peer), carl)
    copies_of(grouped, 1, claimed_by=ada, claimed_at=timezone.now())
    web = browser(ada)

    def queries() -> int:
        with CaptureQueriesContext(db_connection) as captured:
            response = web.get(INBOX)
        assert response.status_code == 200
        return len(captured)

    few = queries()
    copies_of(own, 12)
    copies_of(grouped, 12)
    assert len(round_links(web.get(INBOX))) == 25
    assert queries() == few


def test_a_claim_lost_to_another_member_reloads_the_inbox_with_a_word(
    fastmcp_peer: Any, ada: Any, bea: Any
) -> None:
    round = ask(to_group(fastmcp_peer), person("carl"))
    browser(ada).post(reverse("calls:claim", args=[round.pk]), {"next": INBOX})
    bea_web = browser(bea)
    before = state()

    lost = bea_web.post(
        reverse("calls:claim", args=[round.pk]), {"next": INBOX}, **htmx("inbox-pending")
    )
    # htmx swaps nothing on an error, so the answer is "reload", with a message.
    assert lost.status_code == 200 and lost["HX-Refresh"] == "true"
    assert state() == before
    page = bea_web.get(INBOX)
    # A member of the group is told who took it.
    assert "That round is no longer waiting for you: ada took it." in visible_text(page)
    assert round.pk not in round_links(page)
    # The same words for a round that does not exist: nothing is revealed.
    missing = bea_web.post(reverse("calls:claim", args=[round.pk + 1000]), **htmx("inbox-pending"))
    assert (missing.status_code, missing["HX-Refresh"]) == (200, "true")
    assert "someone else took it" in visible_text(bea_web.get(INBOX))
    # And a stranger learns nothing of who took it.
    zoe = browser(person("zoe"))
    zoe.post(reverse("calls:claim", args=[round.pk]), **htmx("inbox-pending"))
    assert "someone else took it" in visible_text(zoe.get(INBOX))
    # Without htmx, the page that says who took it (409); a stranger's is the 404.
    lost_page = bea_web.post(reverse("calls:claim", args=[round.pk]))
    assert lost_page.status_code == 409 and "took this round" in visible_text(lost_page)
    stranger = browser(person("zed")).post(reverse("calls:claim", args=[round.pk]))
    assert stranger.status_code == 404
