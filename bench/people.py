"""A simulated person using the app over HTTP: signs in, starts the bench tool, answers it.

Only what a browser without JavaScript does: GET pages, POST their forms with the CSRF token,
follow the 303s by reading ``Location``.
"""

from __future__ import annotations

import asyncio
import re
import time
from html import unescape

import httpx

from .stack import CONNECTION, TOOL

_INPUT = re.compile(r"<(input|select|textarea)\b([^>]*)>", re.IGNORECASE)
_ATTR = re.compile(r'([a-zA-Z_:-]+)\s*=\s*"([^"]*)"')
_ROUND_URL = re.compile(r"/rounds/(\d+)/")
_CALL_URL = re.compile(r"/calls/(\d+)/")
_ROUND_PATH = re.compile(r"^/rounds/(\d+)/$")
_META_REFRESH = re.compile(
    r'<meta\s+http-equiv="refresh"\s+content="([\d.]+)\s*(?:;\s*url=([^"]*))?"', re.IGNORECASE
)
# The call page's primary button to the round waiting for this person (templates/calls/call.html).
_ANSWER_BUTTON = re.compile(r'<a class="button primary big" href="(/rounds/\d+/)">')


def form_fields(html: str) -> dict[str, str]:
    """Every named field of the page with its value, checkboxes ticked."""
    fields: dict[str, str] = {}
    for _tag, attrs in _INPUT.findall(html):
        found = {k.lower(): unescape(v) for k, v in _ATTR.findall(attrs)}
        name = found.get("name")
        if not name or name in fields:
            continue
        kind = found.get("type", "text").lower()
        if kind == "submit":
            continue
        # A checkbox is ticked, with its value ("on" when it has none).
        fields[name] = found.get("value", "on") if kind == "checkbox" else found.get("value", "")
    return fields


class Person:
    """One signed-in browser session against the app at ``base_url``."""

    def __init__(self, base_url: str, username: str, password: str) -> None:
        self.base_url = base_url
        self.username = username
        self.password = password
        self.http = httpx.AsyncClient(
            base_url=base_url,
            follow_redirects=False,
            timeout=60.0,
            limits=httpx.Limits(max_connections=2, max_keepalive_connections=2),
        )
        self._answer_fields: dict[str, str] | None = None
        self._start_fields: dict[str, str] | None = None

    async def close(self) -> None:
        await self.http.aclose()

    @property
    def csrf(self) -> str:
        return self.http.cookies.get("csrftoken", "")

    @property
    def session_cookie(self) -> str:
        return self.http.cookies.get("sessionid", "")

    async def login(self) -> None:
        page = await self.http.get("/accounts/login/")
        page.raise_for_status()
        response = await self.http.post(
            "/accounts/login/",
            data={
                "username": self.username,
                "password": self.password,
                "csrfmiddlewaretoken": self.csrf,
            },
            headers={"Referer": f"{self.base_url}/accounts/login/"},
        )
        if response.status_code != 302 or not self.session_cookie:
            raise RuntimeError(f"login failed for {self.username}: {response.status_code}")

    async def _post(self, path: str, data: dict[str, str]) -> httpx.Response:
        data = {**data, "csrfmiddlewaretoken": self.csrf}
        return await self.http.post(path, data=data, headers={"Referer": self.base_url + path})

    async def post(self, path: str, data: dict[str, str]) -> httpx.Response:
        """POST a form as the browser does (CSRF token, Referer); redirects not followed."""
        return await self._post(path, data)

    async def start_form(self) -> tuple[str, dict[str, str]]:
        """The bench tool's start form: its address and its fields (read once)."""
        path = f"/calls/start/{CONNECTION}/?tool={TOOL}"
        if self._start_fields is None:
            page = await self.http.get(path)
            page.raise_for_status()
            self._start_fields = {
                k: v for k, v in form_fields(page.text).items() if k != "csrfmiddlewaretoken"
            }
        return path, self._start_fields

    async def start(self) -> tuple[int, int]:
        """Start the bench tool; returns (call id, pending round id)."""
        path, fields = await self.start_form()
        response = await self._post(path, fields)
        location = response.headers.get("location", "")
        if response.status_code != 303:
            raise RuntimeError(f"start did not park a round: {response.status_code} {location}")
        found = _ROUND_URL.search(location)
        if not found:
            # A busy process: the call page, until the round is there (see follow_to_round).
            round_id, _clicks = await self.follow_to_round(location, time.perf_counter() + 120)
        else:
            round_id = int(found.group(1))
        return await self._call_of(round_id), round_id

    async def follow_to_round(self, location: str, deadline: float) -> tuple[int, int]:
        """From where a start's 303 led, on to the round page as a browser without JavaScript
        gets there: redirects followed, the waiting page's ``<noscript>`` refresh honoured
        (waiting as long as it says, then loading what it names), and, on a call page that
        no longer refreshes, its "Answer round" button clicked as a person would. Returns the
        round's id and how many clicks it took; the round page itself is not loaded."""
        clicks = 0
        while time.perf_counter() < deadline:
            location = location.removeprefix(self.base_url)
            found = _ROUND_PATH.match(location.split("?")[0])
            if found:
                return int(found.group(1)), clicks
            page = await self.http.get(location)
            if page.status_code in (301, 302, 303, 307):
                location = page.headers["location"]
                continue
            page.raise_for_status()
            refresh = _META_REFRESH.search(page.text)
            if refresh is not None:
                await asyncio.sleep(float(refresh.group(1)))
                location = unescape(refresh.group(2)) if refresh.group(2) else location
                continue
            button = _ANSWER_BUTTON.search(page.text)
            if button is None:
                raise RuntimeError(f"{location} neither refreshes nor leads to a round")
            clicks += 1
            location = unescape(button.group(1))
        raise TimeoutError("no round page in time")

    async def _call_of(self, round_id: int) -> int:
        page = await self.http.get(f"/rounds/{round_id}/")
        page.raise_for_status()
        if self._answer_fields is None:
            self._answer_fields = {
                k: v for k, v in form_fields(page.text).items() if k != "csrfmiddlewaretoken"
            }
        found = _CALL_URL.search(page.text)
        if not found:
            raise RuntimeError("the round page links to no call")
        return int(found.group(1))

    async def answer(self, round_id: int) -> httpx.Response:
        """Accept the round with "yes"; the response is the 303 to the call page."""
        # The one yes/no question is a checkbox, ticked by form_fields.
        fields = {**(self._answer_fields or {}), "action": "accept"}
        response = await self._post(f"/rounds/{round_id}/", fields)
        if response.status_code != 303:
            raise RuntimeError(f"answer refused: {response.status_code} {response.text[:500]}")
        return response
