"""The page behind ``verify_identity``: a stand-in for an identity provider.

URL-mode elicitation sends a person to a page the *server* controls; the client only shows
the link and later says "I've finished". This module is that page. ``GET /verify?ref=…``
shows what is being verified and an **I'm verified** button; pressing it records the
reference as verified, which is what the tool checks when the client comes back.

Nothing real is checked here. A real server would redirect to its identity provider and
record the outcome from the provider's callback instead of from a button.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from html import escape

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

VERIFY_PATH = "/verify"


@dataclass
class Verification:
    purpose: str
    expires_at: float
    verified: bool = False


class VerificationDesk:
    """Open verifications by reference, kept in memory for as long as a round's state lives.

    Memory is enough for a single-process demo: when the server restarts, its references are
    gone and the tool simply asks again with a fresh one.
    """

    def __init__(self, lifetime: float) -> None:
        self.lifetime = lifetime
        self._open: dict[str, Verification] = {}
        # Sync tools run in worker threads while the page handlers run on the event loop.
        self._lock = threading.Lock()

    def open(self, purpose: str) -> str:
        # The reference is the only thing that grants the right to confirm, so it must be
        # unguessable: anyone holding the link can press the button.
        ref = secrets.token_urlsafe(18)
        with self._lock:
            self._forget_expired()
            self._open[ref] = Verification(purpose, time.monotonic() + self.lifetime)
        return ref

    def get(self, ref: str) -> Verification | None:
        with self._lock:
            self._forget_expired()
            return self._open.get(ref)

    def confirm(self, ref: str) -> bool:
        with self._lock:
            self._forget_expired()
            found = self._open.get(ref)
            if found is None:
                return False
            found.verified = True
            return True

    def use(self, ref: str) -> bool:
        """True once for a confirmed reference, which is then forgotten."""
        with self._lock:
            self._forget_expired()
            found = self._open.get(ref)
            if found is None or not found.verified:
                return False
            del self._open[ref]
            return True

    def _forget_expired(self) -> None:
        now = time.monotonic()
        for ref in [r for r, v in self._open.items() if v.expires_at <= now]:
            del self._open[ref]


def verify_page(desk: VerificationDesk) -> Callable[[Request], Awaitable[Response]]:
    """The ``/verify`` endpoint (GET shows the page, POST presses the button)."""

    async def endpoint(request: Request) -> Response:
        if request.method == "POST":
            form = await request.form()
            ref = str(form.get("ref", ""))
            if not desk.confirm(ref):
                return _unknown()
            return _page(
                "You are verified",
                "<p>Thank you. Go back to mrtrweb and press <strong>I've finished</strong>; "
                "the demo server will see this confirmation.</p>",
            )
        ref = request.query_params.get("ref", "")
        found = desk.get(ref)
        if found is None:
            return _unknown()
        if found.verified:
            return _page(
                "Already verified",
                "<p>This reference is verified. Go back to mrtrweb and press "
                "<strong>I've finished</strong>.</p>",
            )
        return _page(
            "Verify your identity",
            f"<p>mrtrweb's demo server asks you to confirm who you are to "
            f"<strong>{escape(found.purpose)}</strong>.</p>"
            "<p>This is a demonstration: nothing is checked. A real server would send you to "
            "its sign-in page here.</p>"
            f'<form method="post" action="{VERIFY_PATH}">'
            f'<input type="hidden" name="ref" value="{escape(ref)}">'
            '<button type="submit">I\'m verified</button>'
            "</form>",
        )

    return endpoint


def _unknown() -> Response:
    return _page(
        "Unknown verification",
        "<p>This verification link is unknown or has expired. Start the call again in "
        "mrtrweb to get a new one.</p>",
        status=404,
    )


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · mrtrweb demo</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;"
        "padding:0 1rem;line-height:1.5}button{font-size:1.1rem;padding:.5rem 1.25rem}</style>"
        f"</head><body><main><h1>{escape(title)}</h1>{body}</main></body></html>"
    )
    # The page must not be framed by another site that could trick a click on the button.
    headers = {"X-Frame-Options": "DENY", "Cache-Control": "no-store"}
    return HTMLResponse(html, status_code=status, headers=headers)
