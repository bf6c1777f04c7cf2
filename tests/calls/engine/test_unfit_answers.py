"""A server's NaN, infinities or lone surrogates fail the call plainly; they are never stored.

Before, a result holding NaN broke the database's JSON check (an IntegrityError, and the call
stayed running), and one holding a lone surrogate was stored and then made every view of the
call a 500. The hostile peer (tests/peers/hostile.py) sends both for real.
"""

from __future__ import annotations

from typing import Any

import pytest

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.servers.models import Connection

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Answers are delivered inline."""


def start(peer: Any, attack: str, user: Any) -> Call:
    connection = Connection.objects.create(name=attack, url=f"{peer.base_url}/a/{attack}/mcp")
    return engine.start_call(
        connection=connection, method=Call.Method.TOOL, target="attack", arguments={}, user=user
    )


@pytest.mark.parametrize(
    ("attack", "why"),
    [
        ("nan-infinity", "not finite"),
        ("lone-surrogates", "not valid Unicode"),
        ("surrogate-state", "not valid Unicode"),
    ],
)
def test_the_call_fails_with_a_plain_message_and_its_page_shows(
    hostile_peer: Any, user: Any, client: Any, attack: str, why: str
) -> None:
    call = start(hostile_peer, attack, user)
    assert call.status == Call.Status.FAILED
    assert why in call.error
    assert call.result is None and not call.rounds.exists()
    client.force_login(user)
    page = client.get(call.get_absolute_url())
    assert page.status_code == 200
    assert why in page.content.decode()


def test_unfit_progress_is_dropped_and_the_call_completes(hostile_peer: Any, user: Any) -> None:
    call = start(hostile_peer, "unfit-progress", user)
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"][0]["text"] == "sound result"
    # None of the three notifications was kept: the page has nothing unfit to show.
    assert call.progress is None
