"""Driving the calls and start pages with the Django test client: the pages a test fetched,
and the small readers and posters their tests share."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

from django.test import Client
from django.urls import reverse

from mrtrweb.calls.models import Call, Round
from mrtrweb.elicitation import field_name_for
from mrtrweb.servers.models import Connection
from tests.elicitation.support import elements


class Pages:
    """Everything a test fetched, so it can check no page ever carried a requestState."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: list[tuple[str, str]] = []

    @property
    def bodies(self) -> list[str]:
        return [body for _, body in self.seen]

    def get(self, url: str, **kw: Any) -> Any:
        return self._keep(url, self.client.get(url, **kw))

    def post(self, url: str, data: Any = None, **kw: Any) -> Any:
        return self._keep(url, self.client.post(url, data or {}, **kw))

    def _keep(self, url: str, response: Any) -> Any:
        if not getattr(response, "streaming", False):
            self.seen.append((url, response.content.decode()))
        return response

    def assert_no_request_state(self) -> None:
        states = [r.request_state for r in Round.objects.all() if r.request_state]
        assert states, "the test never parked a round with state"
        for url, body in self.seen:
            # The catalog shows the server's own tool descriptions, which may name the field.
            if not url.startswith("/calls/start/"):
                assert "requestState" not in body, url
                assert "request_state" not in body, url
            for state in states:
                assert state not in body
                assert state[10:40] not in body


def start_url(conn: Connection, **query: str) -> str:
    url = reverse("starting:start", kwargs={"connection": conn.name})
    return f"{url}?{'&'.join(f'{k}={v}' for k, v in query.items())}" if query else url


def arg(name: str) -> str:
    return f"arg-{field_name_for(name)}"


def start_tool(pages: Pages, conn: Connection, tool: str, **arguments: str) -> Any:
    data = {arg(k): v for k, v in arguments.items()}
    return pages.post(start_url(conn, tool=tool), {**data, "start": "1"})


def text(response: Any) -> str:
    return response.content.decode()


def visible_text(response: Any) -> str:
    """The page's text with tags dropped and whitespace collapsed."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", text(response), flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())


def buttons(response: Any) -> list[str]:
    return [" ".join(el.text.split()) for el in elements(text(response)) if el.tag == "button"]


def only_call() -> Call:
    return Call.objects.get()


def tool_calls(peer: Any, since: int) -> list[dict[str, Any]]:
    return [r for r in peer.recorded(since) if (r["json"] or {}).get("method") == "tools/call"]
