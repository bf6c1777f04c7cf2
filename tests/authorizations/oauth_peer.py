"""A small real OAuth 2.1 authorization server and protected MCP endpoint, for the page tests.

Starlette, answering in this process: mrtrweb reaches it through the test hook
``mrtrweb.mcp.io_loop.serve_in_process`` (every client made by ``io_loop.new_http``), and a
test plays the browser with :meth:`OAuthPeer.browse` (Starlette's ``TestClient``).

It does what a careful server does, and checks what a careful client must send: RFC 9728
protected resource metadata and an RFC 8414 document with RFC 9207 ``iss`` in every answer,
PKCE S256 (the verifier checked at the token endpoint), ``resource`` (RFC 8707) in both
requests, the registered ``redirect_uri``, single-use codes, dynamic registration, client ID
metadata documents (fetched with ``fetch_document``), refresh with rotation, RFC 7009
revocation. It approves every request (``deny`` makes it answer ``access_denied``). Every
secret it issues holds ``sekret``, which the suite's guard looks for in pages and logs.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus, urlencode, urlsplit

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from mrtrweb.mcp import io_loop

HOST = "127.0.0.1"


def _secret(prefix: str) -> str:
    return f"{prefix}-sekret-{secrets.token_urlsafe(12)}"


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    scope: str
    resource: str
    used: bool = False


@dataclass
class OAuthPeer:
    """The server; ``issuer``, ``mcp_url``; what it issued and saw, for the tests to check."""

    port: int
    cimd: bool = False
    registration: bool = True
    deny: bool = False
    deny_error: str = "access_denied"
    deny_description: str = "The person said no"
    scopes: tuple[str, ...] = ("files:read", "files:write")
    access_ttl: int = 3600
    resource: str | None = None  # what the resource metadata says (default: ``mcp_url``)
    fetch_document: Callable[[str], dict[str, Any] | None] | None = None
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, Grant] = field(default_factory=dict)
    access_tokens: dict[str, str] = field(default_factory=dict)  # token -> client_id
    refresh_tokens: dict[str, str] = field(default_factory=dict)
    revoked: list[str] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    # The bearer token of every request to /mcp ("" without one), in order.
    mcp_bearers: list[str] = field(default_factory=list)
    # With ``oauth_peer(mcp=True)``: the fastmcp peer that answers /mcp once a token is valid.
    backend: Any = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def issuer(self) -> str:
        return self.base_url

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    # -- metadata -------------------------------------------------------------------------

    def resource_metadata(self, request: Request) -> Response:
        return JSONResponse(
            {
                "resource": self.resource or self.mcp_url,
                "authorization_servers": [self.issuer],
                "scopes_supported": list(self.scopes),
            }
        )

    def server_metadata(self, request: Request) -> Response:
        document: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.base_url}/authorize",
            "token_endpoint": f"{self.base_url}/token",
            "revocation_endpoint": f"{self.base_url}/revoke",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "client_secret_basic",
                "client_secret_post",
                "none",
            ],
            "authorization_response_iss_parameter_supported": True,
            "scopes_supported": list(self.scopes),
        }
        if self.registration:
            document["registration_endpoint"] = f"{self.base_url}/register"
        if self.cimd:
            document["client_id_metadata_document_supported"] = True
        return JSONResponse(document)

    # -- clients --------------------------------------------------------------------------

    async def register(self, request: Request) -> Response:
        body = await request.json()
        client_id = f"client-{secrets.token_hex(4)}"
        method = body.get("token_endpoint_auth_method") or "client_secret_basic"
        client = {
            "client_id": client_id,
            "redirect_uris": body.get("redirect_uris") or [],
            "token_endpoint_auth_method": method,
            "grant_types": body.get("grant_types") or [],
            "application_type": body.get("application_type"),
        }
        if method != "none":
            client["client_secret"] = _secret("cs")
        self.clients[client_id] = client
        return JSONResponse(client, status_code=201)

    def add_client(self, client_id: str, secret: str | None, method: str) -> None:
        self.clients[client_id] = {
            "client_id": client_id,
            "client_secret": secret,
            "redirect_uris": [],
            "token_endpoint_auth_method": method,
            "preregistered": True,
        }

    def _client(self, client_id: str) -> dict[str, Any] | None:
        if client_id in self.clients:
            return self.clients[client_id]
        if self.cimd and client_id.startswith(("http://", "https://")) and self.fetch_document:
            document = self.fetch_document(client_id)
            if document and document.get("client_id") == client_id:
                return {**document, "token_endpoint_auth_method": "none"}
        return None

    # -- authorization ---------------------------------------------------------------------

    def authorize(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.authorize_requests.append(params)
        client = self._client(params.get("client_id", ""))
        redirect_uri = params.get("redirect_uri", "")
        if client is None:
            return JSONResponse({"error": "invalid_client"}, status_code=400)
        if not client.get("preregistered") and redirect_uri not in client["redirect_uris"]:
            return JSONResponse({"error": "invalid_redirect_uri"}, status_code=400)

        def back(**answer: str) -> Response:
            answer = {**answer, "state": params.get("state", ""), "iss": self.issuer}
            return RedirectResponse(f"{redirect_uri}?{urlencode(answer)}", status_code=302)

        if params.get("code_challenge_method") != "S256" or not params.get("code_challenge"):
            return back(error="invalid_request", error_description="PKCE S256 required")
        if params.get("resource") != self.mcp_url:
            return back(error="invalid_target")
        if self.deny:
            return back(error=self.deny_error, error_description=self.deny_description)
        code = _secret("code")
        self.codes[code] = Grant(
            client_id=params["client_id"],
            redirect_uri=redirect_uri,
            challenge=params["code_challenge"],
            scope=params.get("scope", ""),
            resource=params["resource"],
        )
        return back(code=code)

    def _authenticated(self, request: Request, form: dict[str, Any]) -> str | None:
        """The client a token or revocation request comes from, None if it fails to prove it
        (HTTP Basic with form-encoded parts, RFC 6749 section 2.3.1; or the form)."""
        client_id = form.get("client_id", "")
        secret = form.get("client_secret")
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            decoded = base64.b64decode(header[6:]).decode()
            raw_id, _, raw_secret = decoded.partition(":")
            client_id, secret = unquote_plus(raw_id), unquote_plus(raw_secret)
        client = self._client(client_id)
        if client is None or (client.get("client_secret") and secret != client["client_secret"]):
            return None
        return client_id

    async def token(self, request: Request) -> Response:
        form = dict(await request.form())
        self.token_requests.append(form)
        client_id = self._authenticated(request, form)
        if client_id is None:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        if form.get("resource") not in (None, self.mcp_url):
            return JSONResponse({"error": "invalid_target"}, status_code=400)
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            grant = self.codes.get(form.get("code", ""))
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if (
                grant is None
                or grant.used
                or grant.client_id != client_id
                or grant.redirect_uri != form.get("redirect_uri")
                or grant.challenge != challenge
                or form.get("resource") != self.mcp_url
            ):
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            grant.used = True
            return self._issue(client_id, grant.scope)
        if grant_type == "refresh_token":
            old = form.get("refresh_token", "")
            if self.refresh_tokens.pop(old, None) != client_id:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return self._issue(client_id, " ".join(self.scopes))
        if grant_type == "client_credentials":
            return self._issue(client_id, form.get("scope", ""), refresh=False)
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)

    def _issue(self, client_id: str, scope: str, *, refresh: bool = True) -> Response:
        access = _secret("at")
        self.access_tokens[access] = client_id
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.access_ttl,
            "scope": scope,
        }
        if refresh:
            body["refresh_token"] = _secret("rt")
            self.refresh_tokens[body["refresh_token"]] = client_id
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    async def revoke(self, request: Request) -> Response:
        form = dict(await request.form())
        if self._authenticated(request, form) is None:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        token = form.get("token", "")
        self.revoked.append(token)
        self.access_tokens.pop(token, None)
        self.refresh_tokens.pop(token, None)
        return Response(status_code=200)

    # -- the protected MCP endpoint --------------------------------------------------------

    async def mcp(self, request: Request) -> Response:
        header = request.headers.get("authorization", "")
        token = header[7:] if header.startswith("Bearer ") else ""
        self.mcp_bearers.append(token)
        if token not in self.access_tokens:
            metadata = f"{self.base_url}/.well-known/oauth-protected-resource/mcp"
            challenge = f'Bearer resource_metadata="{metadata}", scope="{" ".join(self.scopes)}"'
            return JSONResponse(
                {"error": "invalid_token"},
                status_code=401,
                headers={"WWW-Authenticate": challenge},
            )
        if self.backend is not None:
            return await self.backend.forward(request)
        body = await request.json()
        return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": {}})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route(
                    "/.well-known/oauth-protected-resource/mcp",
                    self.resource_metadata,
                    methods=["GET"],
                ),
                Route(
                    "/.well-known/oauth-authorization-server",
                    self.server_metadata,
                    methods=["GET"],
                ),
                Route("/register", self.register, methods=["POST"]),
                Route("/authorize", self.authorize, methods=["GET"]),
                Route("/token", self.token, methods=["POST"]),
                Route("/revoke", self.revoke, methods=["POST"]),
                Route("/mcp", self.mcp, methods=["POST"]),
            ]
        )

    # -- the browser's side ---------------------------------------------------------------

    def browse(self, url: str) -> str:
        """Open ``url`` (the authorization request) as a browser would; where the server
        sends the browser back to (the callback URL with its answer)."""
        assert urlsplit(url).netloc == f"{HOST}:{self.port}", url
        with TestClient(self.app(), base_url=self.base_url) as browser:
            response = browser.get(url, follow_redirects=False)
        assert response.status_code == 302, (response.status_code, response.text)
        return response.headers["location"]


class FastMCPBackend:
    """The repository's fastmcp peer (tests/peers/fastmcp_server.py) behind the token check:
    its app runs with its lifespan on a loop of its own (tests/peers/inprocess.py)."""

    def __init__(self, base_url: str) -> None:
        from tests.peers import fastmcp_server
        from tests.peers.inprocess import _AppThread

        fastmcp_server.BASE_URL["value"] = base_url
        app = fastmcp_server.build_server(page_size=50, state_ttl=600.0, state_key=None).http_app(
            path="/mcp"
        )
        self._thread = _AppThread(app)
        self._asgi = httpx.ASGITransport(app=app, client=(HOST, 50000))

    async def forward(self, request: Request) -> Response:
        outgoing = httpx.Request(
            request.method,
            str(request.url),
            headers=[(k, v) for k, v in request.headers.items() if k != "authorization"],
            content=await request.body(),
        )
        answer = await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(
                self._asgi.handle_async_request(outgoing), self._thread.loop
            )
        )
        content = await answer.aread()
        headers = {
            k: v
            for k, v in answer.headers.items()
            if k not in ("content-length", "transfer-encoding")
        }
        return Response(content, status_code=answer.status_code, headers=headers)

    def close(self) -> None:
        self._thread.close()


@contextmanager
def oauth_peer(*, mcp: bool = False, **options: Any) -> Iterator[OAuthPeer]:
    """An :class:`OAuthPeer` on a port of its own (held, never listening), mounted for
    mrtrweb's HTTP clients until the block ends; with ``mcp``, a real MCP server behind it."""
    reserved = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    reserved.bind((HOST, 0))
    peer = OAuthPeer(port=int(reserved.getsockname()[1]), **options)
    if mcp:
        peer.backend = FastMCPBackend(peer.base_url)
    io_loop.serve_in_process(peer.base_url, httpx.ASGITransport(app=peer.app()))
    try:
        yield peer
    finally:
        io_loop.serve_in_process(peer.base_url, None)
        if peer.backend is not None:
            peer.backend.close()
        reserved.close()
