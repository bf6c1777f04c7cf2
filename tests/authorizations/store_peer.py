"""A small OAuth-protected MCP server for the engine's tests: the fastmcp peer behind a bearer
check, and its own authorization server, in one Starlette app.

- ``/.well-known/oauth-protected-resource[/mcp]``: RFC 9728 metadata (resource ``<base>/mcp``);
- ``/.well-known/oauth-authorization-server``: RFC 8414 metadata (issuer ``<base>``);
- ``POST /token``: ``refresh_token`` (rotated every time; a spent or revoked one is
  ``invalid_grant``) and ``client_credentials`` (client secret, basic or post);
- ``/mcp``: the fastmcp peer (tests/peers/fastmcp_server.py), reached only with a live access
  token: 401 with a ``WWW-Authenticate`` challenge otherwise, 403 ``insufficient_scope`` for
  a tool that needs a scope the token lacks. Each request is recorded with whose token it
  carried (``Authority.seen``).

Every token and secret it issues contains ``sekret`` (the suite's guard fails any page or log
record that shows one). ``Authority.issue`` stands for a person's authorization (the
browser flow is oauth-pages' to test). The app runs in the test process through
``io_loop.serve_in_process`` (:func:`in_process`) or on a real socket (:func:`on_socket`, for
child processes).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from mrtrweb.mcp import io_loop
from tests.peers import fastmcp_server
from tests.peers._common import MCP_PATH
from tests.peers.inprocess import _AppThread, _Bridge

HOST = "127.0.0.1"
SCOPE = "mcp:tools"
CLIENT_ID = "mrtrweb-test-client"
CLIENT_SECRET = "cs-sekret-static-client-secret"


def _token(kind: str) -> str:
    return f"{kind}-sekret-{secrets.token_urlsafe(12)}"


@dataclass
class Grant:
    subject: str
    scopes: tuple[str, ...]
    refresh_token: str
    revoked: bool = False


@dataclass
class Authority:
    """The authorization server's memory, shared by every request (and read by the tests)."""

    access_ttl: float = 3600.0
    # Seconds a successful refresh's answer is held back (after the rotation took effect).
    refresh_delay: float = 0.0
    # Tool name -> the scope it needs beyond mcp:tools (for 403 insufficient_scope).
    tool_scopes: dict[str, str] = field(default_factory=dict)
    # The token endpoint answers 503 temporarily_unavailable while this is set.
    token_endpoint_down: bool = False
    # Subjects whose tokens the resource refuses however fresh (an account suspended there).
    refused_subjects: set[str] = field(default_factory=set)
    grants: dict[str, Grant] = field(default_factory=dict)
    access: dict[str, tuple[str, float, tuple[str, ...]]] = field(default_factory=dict)
    spent: set[str] = field(default_factory=set)
    # (grant id or client, what happened): refresh, reuse, refused, client_credentials.
    token_requests: list[tuple[str, str]] = field(default_factory=list)
    # (subject the token belonged to, or None, JSON-RPC method, tool name).
    seen: list[tuple[str | None, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def issue(
        self, subject: str, scopes: tuple[str, ...] = (SCOPE,), expires_in: float | None = None
    ) -> dict[str, Any]:
        """A new grant, as the token endpoint answers an authorization code."""
        grant_id = secrets.token_hex(6)
        refresh = _token("rt")
        with self.lock:
            self.grants[grant_id] = Grant(subject, tuple(scopes), refresh)
            return self._access_for(grant_id, refresh, expires_in)

    def _access_for(
        self, grant_id: str, refresh: str, expires_in: float | None = None
    ) -> dict[str, Any]:
        grant = self.grants[grant_id]
        ttl = self.access_ttl if expires_in is None else expires_in
        access = _token("at")
        self.access[access] = (grant_id, time.time() + ttl, grant.scopes)
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(ttl),
            "refresh_token": refresh,
            "scope": " ".join(grant.scopes),
        }

    def revoke(self, subject: str) -> None:
        """The person revoked mrtrweb's access at the authorization server."""
        with self.lock:
            for grant in self.grants.values():
                if grant.subject == subject:
                    grant.revoked = True

    def expire_access_tokens(self) -> None:
        """Every access token issued so far stops working (the server's clock moved on)."""
        with self.lock:
            self.access = {token: (g, 0.0, s) for token, (g, _, s) in self.access.items()}

    def current_refresh_token(self, subject: str) -> str:
        grants = [g for g in self.grants.values() if g.subject == subject]
        return grants[-1].refresh_token

    def refreshes(self) -> list[str]:
        return [what for _, what in self.token_requests]

    # -- the endpoints -------------------------------------------------------------------

    def refresh(self, refresh_token: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            for grant_id, grant in self.grants.items():
                if grant.refresh_token == refresh_token and not grant.revoked:
                    # Rotation: the old refresh token dies with this answer.
                    self.spent.add(refresh_token)
                    grant.refresh_token = _token("rt")
                    self.token_requests.append((grant_id, "refresh"))
                    return 200, self._access_for(grant_id, grant.refresh_token)
            what = "reuse" if refresh_token in self.spent else "refused"
            self.token_requests.append(("?", what))
            return 400, {"error": "invalid_grant", "error_description": "refresh token is dead"}

    def client_credentials(self, scopes: tuple[str, ...]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            grant_id = secrets.token_hex(6)
            self.grants[grant_id] = Grant("machine", scopes or (SCOPE,), "")
            self.token_requests.append((grant_id, "client_credentials"))
            answer = self._access_for(grant_id, "")
            answer.pop("refresh_token")
            return 200, answer

    def check(self, header: str | None) -> tuple[str | None, tuple[str, ...]] | None:
        """Whose live token ``header`` carries, None when it carries none."""
        if not header or not header.lower().startswith("bearer "):
            return None
        with self.lock:
            found = self.access.get(header[7:].strip())
            if found is None or found[1] < time.time():
                return None
            grant = self.grants[found[0]]
            if grant.revoked or grant.subject in self.refused_subjects:
                return None
            return grant.subject, found[2]


def build_app(authority: Authority, base_url: str) -> Starlette:
    resource = f"{base_url}{MCP_PATH}"
    prm_url = f"{base_url}/.well-known/oauth-protected-resource{MCP_PATH}"
    fastmcp_server.BASE_URL["value"] = base_url
    mcp_app = fastmcp_server.build_server(page_size=50, state_ttl=600.0, state_key=None).http_app(
        path=MCP_PATH
    )

    async def protected_resource(request: Request) -> Response:
        return JSONResponse(
            {
                "resource": resource,
                "authorization_servers": [base_url],
                "scopes_supported": [SCOPE],
                "bearer_methods_supported": ["header"],
            }
        )

    async def server_metadata(request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": base_url,
                "authorization_endpoint": f"{base_url}/authorize",
                "token_endpoint": f"{base_url}/token",
                "response_types_supported": ["code"],
                "grant_types_supported": [
                    "authorization_code",
                    "refresh_token",
                    "client_credentials",
                ],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": [
                    "client_secret_basic",
                    "client_secret_post",
                    "none",
                ],
                "scopes_supported": [SCOPE, "admin", "offline_access"],
            }
        )

    async def token(request: Request) -> Response:
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        if authority.token_endpoint_down:
            authority.token_requests.append(("?", "down"))
            return JSONResponse({"error": "temporarily_unavailable"}, status_code=503)
        if form.get("grant_type") == "refresh_token":
            status, body = authority.refresh(form.get("refresh_token", ""))
            if status == 200 and authority.refresh_delay:
                # Rotated at once, answered late: a concurrent reuse is refused before the
                # winner even has its new tokens (the hardest order for the client).
                await asyncio.sleep(authority.refresh_delay)
            return JSONResponse(body, status_code=status)
        if form.get("grant_type") == "client_credentials":
            client_id, secret = form.get("client_id"), form.get("client_secret")
            basic = request.headers.get("authorization", "")
            if basic.lower().startswith("basic "):
                decoded = base64.b64decode(basic[6:]).decode()
                client_id, _, secret = decoded.partition(":")
            if client_id != CLIENT_ID or secret != CLIENT_SECRET:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            status, body = authority.client_credentials(tuple(form.get("scope", "").split()))
            return JSONResponse(body, status_code=status)
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)

    app = Starlette(
        routes=[
            Route(f"/.well-known/oauth-protected-resource{MCP_PATH}", protected_resource),
            Route("/.well-known/oauth-protected-resource", protected_resource),
            Route("/.well-known/oauth-authorization-server", server_metadata),
            Route("/token", token, methods=["POST"]),
            Mount("/", app=_Guard(mcp_app, authority, prm_url)),
        ],
        lifespan=lambda app: mcp_app.router.lifespan_context(mcp_app),
    )
    return app


class _Guard:
    """The resource server's bearer check in front of the MCP app."""

    def __init__(self, app: Any, authority: Authority, prm_url: str) -> None:
        self.app, self.authority, self.prm_url = app, authority, prm_url

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != MCP_PATH:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        body = await request.body()
        method, tool = "", ""
        with contextlib.suppress(ValueError):
            message = httpx.Response(200, content=body).json()
            method = message.get("method", "")
            tool = (message.get("params") or {}).get("name", "")
        who = self.authority.check(request.headers.get("authorization"))
        self.authority.seen.append((who[0] if who else None, method, tool))
        if who is None:
            challenge = (
                f'Bearer error="invalid_token", resource_metadata="{self.prm_url}", scope="{SCOPE}"'
            )
            await Response(status_code=401, headers={"WWW-Authenticate": challenge})(
                scope, receive, send
            )
            return
        needed = self.authority.tool_scopes.get(tool)
        if needed and needed not in who[1]:
            challenge = (
                f'Bearer error="insufficient_scope", scope="{SCOPE} {needed}", '
                f'resource_metadata="{self.prm_url}"'
            )
            await Response(status_code=403, headers={"WWW-Authenticate": challenge})(
                scope, receive, send
            )
            return

        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class OAuthPeer:
    """The app served, its ``url`` (the MCP endpoint), ``base_url`` and ``authority``."""

    def __init__(self, authority: Authority, port: int) -> None:
        self.authority = authority
        self.port = port

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}{MCP_PATH}"


@contextlib.contextmanager
def in_process(authority: Authority | None = None) -> Iterator[OAuthPeer]:
    """Served inside this process, mounted on mrtrweb's HTTP clients (no socket)."""
    reserved = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    reserved.bind((HOST, 0))
    peer = OAuthPeer(authority or Authority(), int(reserved.getsockname()[1]))
    app = build_app(peer.authority, peer.base_url)
    thread = _AppThread(app)
    io_loop.serve_in_process(peer.base_url, _Bridge(app, thread.loop))  # type: ignore[arg-type]
    try:
        yield peer
    finally:
        io_loop.serve_in_process(peer.base_url, None)
        thread.close()
        reserved.close()


@contextlib.contextmanager
def on_socket(authority: Authority | None = None) -> Iterator[OAuthPeer]:
    """Served by uvicorn on a real port (a thread of this process), for child processes."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind((HOST, 0))
    port = int(probe.getsockname()[1])
    probe.close()
    peer = OAuthPeer(authority or Authority(), port)
    app = build_app(peer.authority, peer.base_url)
    server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="oauth-peer", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the OAuth peer did not start")
        time.sleep(0.05)
    try:
        yield peer
    finally:
        server.should_exit = True
        thread.join(timeout=10)
