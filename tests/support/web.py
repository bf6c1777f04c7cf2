"""Speaking to a served app over HTTP as a person: CSRF tokens and signed-in clients."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.support.second_factor import pass_code_page

_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def csrf_token(html: str) -> str:
    """The CSRF token of the first form in ``html``."""
    found = _CSRF_INPUT.search(html)
    assert found, f"no CSRF token in the page:\n{html[:1000]}"
    return found.group(1)


def session_client(base_url: str, session_key: str, **kwargs: Any) -> httpx.Client:
    """A client carrying an existing session (created without signing in)."""
    return httpx.Client(
        base_url=base_url, cookies={"sessionid": session_key}, timeout=30.0, **kwargs
    )


def signed_in_client(base_url: str, username: str, password: str) -> httpx.Client:
    """A client that signed in through the login page, as a person would (typing the harness
    authenticator's code when the code page asks: tests/support/second_factor.py)."""
    client = httpx.Client(base_url=base_url, timeout=30, follow_redirects=False)
    page = client.get("/accounts/login/")
    done = client.post(
        "/accounts/login/",
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": csrf_token(page.text),
        },
    )
    assert done.status_code == 302, done.text[:500]
    pass_code_page(client)
    return client
