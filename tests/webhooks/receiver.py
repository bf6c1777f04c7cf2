"""A real webhook receiver for the tests: a threaded HTTP server on 127.0.0.1.

It verifies each request as a program receiving mrtrweb's webhooks would: the Standard
Webhooks headers with the ``standardwebhooks`` library's own ``Webhook.verify`` and the secret
in the ``whsec_`` form the token pages show, and (until 0.3.0) ``X-Mrtr-Signature`` with
:func:`mrtrweb.webhooks.signing.verify`. It records what came, and answers according to a
plan: a list of actions, one per request (an HTTP status, a status and a dict of headers, or
``STALL`` to hold the request without answering); when the plan runs out it answers 200.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError

from mrtrweb.webhooks.signing import standard_secret, verify

STALL = "stall"


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    # Both signatures verified: the Standard Webhooks one and X-Mrtr-Signature.
    verified: bool
    answered: Any
    standard_verified: bool = False
    legacy_verified: bool = False

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    secret: str
    plan: list[Any] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    port: int = 0
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def next_action(self) -> Any:
        with self.lock:
            return self.plan.pop(0) if self.plan else 200

    def events(self) -> list[str]:
        return [r.headers.get("x-mrtr-event", "") for r in self.received]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            action = receiver.next_action()
            try:
                Webhook(standard_secret(receiver.secret)).verify(body, headers)
                standard = True
            except WebhookVerificationError:
                standard = False
            legacy = verify(receiver.secret, headers.get("x-mrtr-signature"), body)
            verified = standard and legacy
            with receiver.lock:
                receiver.received.append(
                    Received(self.path, headers, body, verified, action, standard, legacy)
                )
            if action == STALL:
                receiver.released.wait(30)
                return
            # An action is a status, or a status and headers to answer with.
            status, extra = (action, {}) if not isinstance(action, tuple) else action
            status = int(status)
            if not verified and status < 300:
                status = 401
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def running_receiver(secret: str, plan: list[Any] | None = None) -> Iterator[Receiver]:
    receiver = Receiver(secret=secret, plan=list(plan or []))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.released.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
