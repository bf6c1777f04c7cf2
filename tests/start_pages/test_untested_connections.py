"""Guard rail: end users are offered only connections whose last test passed; operators see
the others on the same page, with the reason and a way to test."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from mrtrweb.people.roles import END_USERS, OPERATORS
from mrtrweb.servers.models import Connection, ToolExposure
from tests.servers.conftest import person, signed_in
from tests.support.factories import make_connection

pytestmark = pytest.mark.django_db(transaction=True)

PICK = reverse("starting:pick")


def start_url(name: str = "peer") -> str:
    return reverse("starting:start", kwargs={"connection": name})


def offered(client: Any, name: str = "peer") -> bool:
    """Whether the pick page offers the connection, and its start page opens."""
    listed = start_url(name) in client.get(PICK).content.decode()
    opens = client.get(start_url(name)).status_code == 200
    assert listed == opens, (listed, opens)
    return listed


def test_a_connection_is_offered_to_end_users_once_an_operator_tested_it(
    fastmcp_peer: Any,
) -> None:
    conn = make_connection(fastmcp_peer, tested_at=None)
    ToolExposure.objects.create(connection=conn, tool_name="echo", exposed=True)
    eve = signed_in(person("eve", END_USERS))
    olga = signed_in(person("olga", OPERATORS))

    assert not offered(eve)
    page = olga.get(PICK).content.decode()
    assert start_url() in page
    assert "Not offered to end users. It was never tested." in page
    test_url = reverse("servers:test", kwargs={"name": "peer"})
    assert f'action="{test_url}"' in page and "Test it now" in page
    assert "Not offered to end users" not in eve.get(PICK).content.decode()

    assert olga.post(test_url).status_code == 200

    conn.refresh_from_db()
    assert conn.tested_at is not None and conn.test_failure == ""
    assert offered(eve)
    assert "Not offered to end users" not in olga.get(PICK).content.decode()


def test_a_connection_whose_last_test_failed_is_withdrawn_until_it_passes(
    fastmcp_peer: Any,
) -> None:
    conn = make_connection(fastmcp_peer)  # tested, and fine
    ToolExposure.objects.create(connection=conn, tool_name="echo", exposed=True)
    eve = signed_in(person("eve", END_USERS))
    olga = signed_in(person("olga", OPERATORS))
    test_url = reverse("servers:test", kwargs={"name": "peer"})
    assert offered(eve)

    # The server moved away: the operator's next test fails.
    Connection.objects.filter(pk=conn.pk).update(url="http://127.0.0.1:9/mcp")
    olga.post(test_url)

    conn.refresh_from_db()
    assert conn.test_failure.startswith("NotDelivered")
    assert not offered(eve)
    page = olga.get(PICK).content.decode()
    assert "Not offered to end users. Its last test failed: NotDelivered" in page
    assert offered(olga)  # operators still open it

    Connection.objects.filter(pk=conn.pk).update(url=fastmcp_peer.url)
    olga.post(test_url)
    assert offered(eve)


def test_the_reason_never_shows_a_secret(fastmcp_peer: Any) -> None:
    # A server that echoes the token back in its error: the stored reason has it blanked.
    conn = make_connection(None, auth=Connection.Auth.HEADER, bearer_token="tok-very-secret-1234")
    Connection.objects.filter(pk=conn.pk).update(url="http://tok-very-secret-1234.invalid/mcp")
    olga = signed_in(person("olga", OPERATORS))

    olga.post(reverse("servers:test", kwargs={"name": "peer"}))

    conn.refresh_from_db()
    assert conn.test_failure and "tok-very-secret-1234" not in conn.test_failure
    assert "Its last test failed: NotDelivered: Could not reach http://[secret].invalid" in (
        olga.get(PICK).content.decode()
    )


def test_an_end_user_with_nothing_offered_is_told_so_plainly() -> None:
    eve = signed_in(person("eve", END_USERS))

    page = eve.get(PICK).content.decode()

    assert "No server is offered to you yet" in page
    assert "manage.py" not in page
