"""The ASGI front of the OAuth peer: its event log, its test controls, two fix-ups.

It sits in front of fastmcp's app (``OAuthFront(app, harness, provider)``) and

- logs every request to ``/authorize``, ``/token``, ``/register`` and ``/mcp`` (the log says
  which grant, subject and client each bearer token belonged to, and how it was answered);
- decides **who approves** an authorization request: ``login_hint``, else the subject a test
  forced (``POST /_test/subject``), else the browser's session at this AS (a cookie, so one
  Playwright context is one person), else a new ``user-N``;
- lets a client that authenticates with HTTP Basic leave ``client_id`` out of the token
  request body, as RFC 6749 §2.3.1 allows (the SDK's token handler insists on it);
- answers the client credentials grant (RFC 6749 §4.4) for pre-registered clients;
- refuses a token request whose ``resource`` is not this server's (RFC 8707 ``invalid_target``);
- adds ``iss`` (RFC 9207) to error redirects from /authorize as well (the SDK adds none);
- serves the test controls under ``/_test/`` to loopback clients only (see README.md).

Tokens appear in the log in full: the tests need them to prove which token a call carried and
to search the app's pages and logs for them.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import time
from collections import deque
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import TokenError
from starlette.requests import Request

from tests.peers._common import (
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    read_body,
    replaying_receive,
    send_json,
)
from tests.peers.oauth_provider import APPROVING_SUBJECT, CLIENT_CREDENTIALS, PeerOAuthProvider

SESSION_COOKIE = "oauth_peer_session"
NO_STORE = (("cache-control", "no-store"), ("pragma", "no-cache"))
LOOPBACK = {"127.0.0.1", "::1"}


def _form(body: bytes) -> dict[str, str]:
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def _basic_client_id(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization", "")
    if not value.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(value[6:].strip()).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    client_id, sep, _ = decoded.partition(":")
    return client_id if sep else None


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization", "")
    return value[7:].strip() if value.lower().startswith("bearer ") else None


class OAuthFront:
    def __init__(self, app: ASGIApp, harness: ASGIApp, provider: PeerOAuthProvider) -> None:
        # ``harness`` is ``app`` behind the shared request recorder (/_peer/requests); the
        # OAuth routes bypass it because it answers /authorize itself (URL-mode visits).
        self.app = app
        self.harness = harness
        self.provider = provider
        self.log: deque[dict[str, Any]] = deque(maxlen=2000)
        self.seq = 0
        self.sessions: dict[str, str] = {}  # browser session cookie at this AS -> subject

    # -- dispatch -----------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.harness(scope, receive, send)
            return
        path: str = scope["path"]
        if path.startswith("/_test/"):
            await self.control(scope, receive, send)
        elif path == "/authorize":
            await self.authorize(scope, receive, send)
        elif path == "/token":
            await self.token(scope, receive, send)
        elif path == "/revoke":
            await self.revoke(scope, receive, send)
        elif path == "/register":
            await self.register(scope, receive, send)
        elif path.rstrip("/") == "/mcp":
            await self.mcp(scope, receive, send)
        else:
            await self.harness(scope, receive, send)

    def add(self, kind: str, **entry: Any) -> dict[str, Any]:
        self.seq += 1
        record = {"seq": self.seq, "time": time.time(), "kind": kind, **entry}
        self.log.append(record)
        return record

    @staticmethod
    def headers(scope: Scope) -> dict[str, str]:
        return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

    # -- /authorize ---------------------------------------------------------------------------

    async def authorize(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        cookie = SimpleCookie(self.headers(scope).get("cookie", ""))
        session = cookie[SESSION_COOKIE].value if SESSION_COOKIE in cookie else None
        new_session: str | None = None
        subject = query.get("login_hint") or self.provider.forced_subject
        if subject is None and session in self.sessions:
            subject = self.sessions[session]  # type: ignore[index]
        if subject is None:
            subject = self.provider.new_subject()
        if session not in self.sessions:
            new_session = secrets.token_urlsafe(16)
            self.sessions[new_session] = subject
        entry = self.add(
            "authorize",
            method=scope["method"],
            client_id=query.get("client_id"),
            redirect_uri=query.get("redirect_uri"),
            resource=query.get("resource"),
            scope=query.get("scope"),
            state_sent="state" in query,
            code_challenge_method=query.get("code_challenge_method"),
            subject=subject,
        )
        grants_before = len(self.provider.grants)

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
                headers = [
                    (k, self._with_iss(v) if k.lower() == b"location" else v)
                    for k, v in message.get("headers", [])
                ]
                if new_session is not None:
                    value = f"{SESSION_COOKIE}={new_session}; Path=/; HttpOnly; SameSite=Lax"
                    headers.append((b"set-cookie", value.encode()))
                message = {**message, "headers": headers}
                location = dict(headers).get(b"location", b"").decode("latin-1")
                params = parse_qs(urlsplit(location).query)
                entry["error"] = params.get("error", [None])[0]
                entry["iss"] = params.get("iss", [None])[0]
                if len(self.provider.grants) > grants_before:
                    entry["grant"] = len(self.provider.grants)
            await send(message)

        token = APPROVING_SUBJECT.set(subject)
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            APPROVING_SUBJECT.reset(token)

    def _with_iss(self, location: bytes) -> bytes:
        """RFC 9207: an error redirect carries ``iss`` too (the provider adds it on success)."""
        text = location.decode("latin-1")
        parts = urlsplit(text)
        params = parse_qsl(parts.query, keep_blank_values=True)
        keys = {k for k, _ in params}
        if "error" not in keys or "iss" in keys:
            return location
        params.append(("iss", self.provider.issuer))
        return urlunsplit(parts._replace(query=urlencode(params))).encode("latin-1")

    # -- /token -------------------------------------------------------------------------------

    def basic_fixup(self, scope: Scope, body: bytes) -> tuple[Scope, bytes, dict[str, str]]:
        """With HTTP Basic, ``client_id`` comes from the header (RFC 6749 §2.3.1); the SDK's
        client authenticator reads it from the body only, so it is copied there."""
        form = _form(body)
        basic_id = _basic_client_id(self.headers(scope))
        if basic_id is None or "client_id" in form:
            return scope, body, form
        form["client_id"] = basic_id
        scope, body = self.with_body(scope, urlencode(form).encode())
        return scope, body, form

    @staticmethod
    def with_body(scope: Scope, body: bytes) -> tuple[Scope, bytes]:
        headers = [
            (k, str(len(body)).encode() if k.lower() == b"content-length" else v)
            for k, v in scope["headers"]
        ]
        return {**scope, "headers": headers}, body

    async def revoke(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope, body, form = self.basic_fixup(scope, await read_body(receive))
        if "client_secret" not in form:
            # The SDK's RevocationRequest declares client_secret without a default, so a
            # request without the key (Basic, or a public client) fails validation.
            form["client_secret"] = ""
            scope, body = self.with_body(scope, urlencode(form).encode())
        entry = self.add(
            "revoke",
            client_id=form.get("client_id"),
            token_type_hint=form.get("token_type_hint"),
            token=form.get("token"),
        )

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
            await send(message)

        await self.app(scope, replaying_receive(body, receive), send_wrapper)

    async def token(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope, body, form = self.basic_fixup(scope, await read_body(receive))
        basic_id = _basic_client_id(self.headers(scope))
        auth_method = (
            "client_secret_basic"
            if basic_id is not None
            else "client_secret_post"
            if "client_secret" in form
            else "none"
        )
        entry = self.add(
            "token",
            grant_type=form.get("grant_type"),
            auth_method=auth_method,
            client_id=form.get("client_id"),
            resource=form.get("resource"),
            scope=form.get("scope"),
            redirect_uri=form.get("redirect_uri"),
            code_verifier_sent="code_verifier" in form,
            refresh_token=form.get("refresh_token"),
        )
        refresh = form.get("refresh_token")
        if refresh:
            record = self.provider.token_record(refresh)
            entry["grant"] = record.grant if record else None
            entry["refresh_token_status"] = record.status() if record else "unknown"
        resource = form.get("resource")
        if resource is not None and resource != self.provider.resource_url:
            entry["status"], entry["error"] = 400, "invalid_target"
            await send_json(
                send,
                400,
                {"error": "invalid_target", "error_description": f"unknown resource {resource}"},
                NO_STORE,
            )
            return
        if form.get("grant_type") == CLIENT_CREDENTIALS:
            request = Request(scope, replaying_receive(body, receive))
            await self.client_credentials(request, form, entry, send)
            return
        chunks: list[bytes] = []

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    self._note_token_answer(entry, b"".join(chunks))
            await send(message)

        await self.app(scope, replaying_receive(body, receive), send_wrapper)

    async def client_credentials(
        self, request: Request, form: dict[str, str], entry: dict[str, Any], send: Send
    ) -> None:
        """The client credentials grant, which the SDK's token handler does not have; the
        client is authenticated by the SDK's own authenticator."""
        payload: dict[str, Any]
        try:
            client = await ClientAuthenticator(self.provider).authenticate_request(request)
        except AuthenticationError as exc:
            status, payload = 401, {"error": "invalid_client", "error_description": exc.message}
        else:
            try:
                token = self.provider.client_credentials(
                    client, form.get("scope", "").split() or None, form.get("resource")
                )
            except TokenError as exc:
                status = 400
                payload = {"error": exc.error, "error_description": exc.error_description}
            else:
                status, payload = 200, token.model_dump(mode="json", exclude_none=True)
        body = json.dumps(payload).encode()
        entry["status"] = status
        self._note_token_answer(entry, body)
        await send_json(send, status, payload, NO_STORE)

    def _note_token_answer(self, entry: dict[str, Any], body: bytes) -> None:
        try:
            answer = json.loads(body)
        except ValueError:
            return
        if not isinstance(answer, dict):
            return
        entry["error"] = answer.get("error")
        access = answer.get("access_token")
        if isinstance(access, str):
            record = self.provider.token_record(access)
            entry["issued_access_token"] = access
            entry["issued_refresh_token"] = answer.get("refresh_token")
            entry["grant"] = record.grant if record else None
            entry["subject"] = record.subject if record else None

    # -- /register ----------------------------------------------------------------------------

    async def register(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        try:
            request = json.loads(body) if body else None
        except ValueError:
            request = None
        entry = self.add("register", method=scope["method"], request=request)

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
            await send(message)

        await self.app(scope, replaying_receive(body, receive), send_wrapper)

    # -- /mcp ---------------------------------------------------------------------------------

    async def mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        try:
            rpc = json.loads(body) if body else None
        except ValueError:
            rpc = None
        params = rpc.get("params") if isinstance(rpc, dict) else None
        params = params if isinstance(params, dict) else {}
        token = _bearer(self.headers(scope))
        record = self.provider.token_record(token) if token else None
        entry = self.add(
            "mcp",
            http_method=scope["method"],
            rpc_method=rpc.get("method") if isinstance(rpc, dict) else None,
            tool=params.get("name"),
            resubmission="inputResponses" in params,
            request_state="requestState" in params,
            token=token,
            grant=record.grant if record else None,
            subject=record.subject if record else None,
            client_id=record.client_id if record else None,
            token_status=record.status() if record else ("unknown" if token else None),
        )

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
                for name, value in message.get("headers", []):
                    if name.lower() == b"www-authenticate":
                        entry["www_authenticate"] = value.decode("latin-1")
            await send(message)

        await self.harness(scope, replaying_receive(body, receive), send_wrapper)

    # -- /_test/ ------------------------------------------------------------------------------

    async def control(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client") or ("", 0)
        if client[0] not in LOOPBACK:
            await send_json(send, 403, {"error": "loopback only"})
            return
        method, path = scope["method"], scope["path"]
        body = await read_body(receive)
        try:
            payload = json.loads(body) if body else {}
        except ValueError:
            payload = {}
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        provider = self.provider
        answer: Any
        if path == "/_test/log" and method == "GET":
            since = int(query.get("since", "0"))
            kind = query.get("kind")
            answer = [
                e for e in self.log if e["seq"] > since and (kind is None or e["kind"] == kind)
            ]
        elif path == "/_test/log" and method == "DELETE":
            self.log.clear()
            answer = {"cleared": True}
        elif path == "/_test/grants" and method == "GET":
            answer = [vars(grant) for grant in provider.grants.values()]
        elif path == "/_test/tokens" and method == "GET":
            answer = [record.public() for record in provider.issued.values()]
        elif path == "/_test/clients" and method == "GET":
            answer = [
                {
                    "client_id": c.client_id,
                    "redirect_uris": [str(u) for u in c.redirect_uris or []],
                    "token_endpoint_auth_method": c.token_endpoint_auth_method,
                    "grant_types": c.grant_types,
                    "scope": c.scope,
                    "client_name": c.client_name,
                }
                for c in provider.clients.values()
            ]
        elif path == "/_test/cimd-fetches" and method == "GET":
            answer = provider.cimd_fetches
        elif path == "/_test/revoke-refresh-tokens" and method == "POST":
            answer = {
                "revoked": provider.revoke_refresh_tokens(
                    payload.get("subject"), bool(payload.get("access_tokens"))
                )
            }
        elif path == "/_test/expire-access-tokens" and method == "POST":
            answer = {"expired": provider.expire_access_tokens(payload.get("subject"))}
        elif path == "/_test/subject" and method == "POST":
            provider.forced_subject = payload.get("subject")
            answer = {"subject": provider.forced_subject}
        elif path == "/_test/config" and method == "GET":
            answer = {
                "issuer": provider.issuer,
                "resource": provider.resource_url,
                "scopes": provider.scopes,
                "access_ttl": provider.access_ttl,
                "refresh_ttl": provider.refresh_ttl,
                "dcr": provider.dcr,
                "cimd": provider.cimd,
            }
        else:
            await send_json(send, 404, {"error": f"no control {method} {path}"})
            return
        await send_json(send, 200, answer)
