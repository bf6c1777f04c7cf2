"""A real OAuth 2.1 authorization server and an MCP server it protects, on loopback, for tests.

One Starlette app served by uvicorn in a thread of the test process, on ``127.0.0.1`` and a
free port. Everything speaks real HTTP: the protected resource metadata (RFC 9728), the
authorization server metadata (RFC 8414 or OpenID Connect, where ``Behaviour`` puts it), an
authorization endpoint that approves without a person by redirecting to ``redirect_uri``
(as the conformance suite's does), a token endpoint (authorization code with PKCE S256,
refresh with rotation, client credentials; client authentication basic, post, none or
``private_key_jwt``), dynamic client registration, and a minimal 2026-07-28 MCP endpoint
(``server/discover``, ``tools/list``, ``tools/call``) that checks the bearer token.

A test picks the misbehaviour it needs through :class:`Behaviour` (a wrong ``iss``, a foreign
``resource``, a metadata ``issuer`` that lies...) and reads what the client sent from
:attr:`OAuthPeer.log`. Tokens can be expired or revoked from the test. Every secret it
issues carries ``MARK``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlencode

import jwt
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

PROTOCOL_VERSION = "2026-07-28"
# Every code, token and client secret issued here carries the suite's secret mark, so the
# guard of tests/support/secret_guard.py catches any that is logged or rendered.
MARK = "sekret"


@dataclass
class Behaviour:
    """How the peer behaves; the defaults are a well-behaved server."""

    issuer_path: str = ""  # e.g. "/tenant1": the issuer has a path
    # Where the AS metadata is served: "oauth" (RFC 8414, path-inserted), "oidc" (OpenID
    # Connect, path-inserted) or "oidc-appended" (issuer + /.well-known/openid-configuration).
    metadata_at: str = "oauth"
    metadata_issuer: str | None = None  # a lie in the metadata's issuer
    advertise_iss: bool | None = True  # authorization_response_iss_parameter_supported
    iss_mode: str = "correct"  # in the redirect: correct, wrong, missing, normalized
    state_mode: str = "echo"  # echo, or "other": a state that is not the request's
    prm_resource: str | None = None  # default: the MCP endpoint's URL
    prm_in_challenge: bool = True  # resource_metadata in WWW-Authenticate
    prm_path_based: bool = True  # PRM at the path-based URL, else only at the root
    prm_scopes: list[str] | None = None
    as_scopes: list[str] | None = None
    challenge_scope: str | None = None  # scope="..." in the 401 challenge
    auth_methods: list[str] = field(default_factory=lambda: ["client_secret_basic"])
    registration: bool = True
    cimd: bool = False  # client_id_metadata_document_supported
    code_challenge_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    rotate_refresh: bool = True
    access_ttl: int = 3600
    # Scopes a method needs ("tools/call": ["write"]); a missing one is a 403 step-up.
    method_scopes: dict[str, list[str]] = field(default_factory=dict)
    # Every tools/call answers 403 asking for a new scope, forever (a step-up that never ends).
    endless_step_up: bool = False
    approve: bool = True  # False: the authorization endpoint shows a page (a person is needed)
    # A hostile server: where its 401 says the metadata is (default: its own), and where
    # ``/moved`` redirects to.
    challenge_metadata: str | None = None
    moved_to: str | None = None
    client_public_key: Any = None  # for private_key_jwt


@dataclass
class Grant:
    client_id: str
    scopes: list[str]
    resource: str | None
    issuer: str


class OAuthPeer:
    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.port = 0
        # Every request: {"path", "method", "query", "form", "json", "headers"}.
        self.log: list[dict[str, Any]] = []
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, tuple[Grant, float]] = {}
        self.refresh: dict[str, Grant] = {}
        self.step_ups = 0
        # The issuer path the PRM points to; tests move it to migrate authorization servers.
        self.active_issuer_path = self.behaviour.issuer_path
        self.app = Starlette(routes=[Route("/{path:path}", self.dispatch, methods=["GET", "POST"])])

    # -- URLs -------------------------------------------------------------------------------

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def issuer(self, path: str | None = None) -> str:
        return f"{self.base}{self.active_issuer_path if path is None else path}"

    def requests_to(self, path: str) -> list[dict[str, Any]]:
        return [entry for entry in self.log if entry["path"] == path]

    # -- test controls ----------------------------------------------------------------------

    def expire_access_tokens(self) -> None:
        self.access = {token: (grant, 0.0) for token, (grant, _) in self.access.items()}

    def revoke_refresh_tokens(self) -> None:
        self.refresh.clear()

    # -- dispatch ---------------------------------------------------------------------------

    async def dispatch(self, request: Request) -> Response:
        path = "/" + request.path_params["path"]
        entry: dict[str, Any] = {
            "path": path,
            "method": request.method,
            "query": dict(request.query_params),
            "headers": dict(request.headers),
        }
        if request.method == "POST":
            if request.headers.get("content-type", "").startswith("application/json"):
                entry["json"] = await request.json()
            else:
                entry["form"] = dict(await request.form())
        self.log.append(entry)
        b = self.behaviour
        prm_path = "/.well-known/oauth-protected-resource"
        if path == (f"{prm_path}/mcp" if b.prm_path_based else prm_path):
            return self.protected_resource_metadata()
        for issuer_path in {b.issuer_path, self.active_issuer_path}:
            if path == self.metadata_path(issuer_path):
                return self.server_metadata(issuer_path)
            if path == f"{issuer_path}/authorize":
                return self.authorize(entry, issuer_path)
            if path == f"{issuer_path}/token" and request.method == "POST":
                return self.token(entry, issuer_path)
            if path == f"{issuer_path}/register" and request.method == "POST" and b.registration:
                return self.register(entry)
        if path == "/mcp" and request.method == "POST":
            return self.mcp(entry)
        if path == "/moved" and b.moved_to:
            return RedirectResponse(b.moved_to, status_code=302)
        return JSONResponse({"error": "not_found"}, status_code=404)

    def metadata_path(self, issuer_path: str) -> str:
        where = self.behaviour.metadata_at
        if where == "oidc-appended":
            return f"{issuer_path}/.well-known/openid-configuration"
        name = "openid-configuration" if where == "oidc" else "oauth-authorization-server"
        return f"/.well-known/{name}{issuer_path}"

    # -- metadata ---------------------------------------------------------------------------

    def protected_resource_metadata(self) -> Response:
        b = self.behaviour
        document: dict[str, Any] = {
            "resource": b.prm_resource or self.url,
            "authorization_servers": [self.issuer()],
        }
        if b.prm_scopes is not None:
            document["scopes_supported"] = b.prm_scopes
        return JSONResponse(document)

    def server_metadata(self, issuer_path: str) -> Response:
        b = self.behaviour
        issuer = self.issuer(issuer_path)
        document: dict[str, Any] = {
            "issuer": b.metadata_issuer or issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": b.auth_methods,
        }
        if b.registration:
            document["registration_endpoint"] = f"{issuer}/register"
        if b.code_challenge_methods is not None:
            document["code_challenge_methods_supported"] = b.code_challenge_methods
        if b.advertise_iss is not None:
            document["authorization_response_iss_parameter_supported"] = b.advertise_iss
        if b.as_scopes is not None:
            document["scopes_supported"] = b.as_scopes
        if b.cimd:
            document["client_id_metadata_document_supported"] = True
        return JSONResponse(document)

    # -- the authorization server -----------------------------------------------------------

    def register(self, entry: dict[str, Any]) -> Response:
        body = entry.get("json") or {}
        client_id = f"client-{secrets.token_hex(4)}"
        method = body.get("token_endpoint_auth_method") or "client_secret_basic"
        secret = None if method == "none" else f"cs-{MARK}-{secrets.token_hex(8)}"
        self.clients[client_id] = {"secret": secret, "method": method, "metadata": body}
        answer = {"client_id": client_id, "token_endpoint_auth_method": method, **body}
        if secret:
            answer["client_secret"] = secret
        return JSONResponse(answer, status_code=201)

    def authorize(self, entry: dict[str, Any], issuer_path: str) -> Response:
        b = self.behaviour
        query = entry["query"]
        if not b.approve:
            return Response("<h1>Sign in</h1>", media_type="text/html")
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        code = f"code-{MARK}-{secrets.token_urlsafe(12)}"
        self.codes[code] = {
            **query,
            "issuer": self.issuer(issuer_path),
            "scopes": query.get("scope", "").split(),
        }
        params = {"code": code}
        if b.state_mode == "echo" and "state" in query:
            params["state"] = query["state"]
        elif b.state_mode == "other":
            params["state"] = "a-state-from-another-session"
        issuer = self.issuer(issuer_path)
        iss = {
            "correct": issuer,
            "wrong": "https://evil.example.com",
            "normalized": issuer + "/",
            "missing": None,
        }[b.iss_mode]
        if iss is not None:
            params["iss"] = iss
        return RedirectResponse(f"{query['redirect_uri']}?{urlencode(params)}", status_code=302)

    def _client(self, entry: dict[str, Any], issuer: str) -> tuple[str | None, str | None]:
        """(client_id, how it authenticated), or (None, why not)."""
        form, headers = entry["form"], entry["headers"]
        if headers.get("authorization", "").startswith("Basic "):
            decoded = base64.b64decode(headers["authorization"][6:]).decode()
            client_id, _, secret = decoded.partition(":")
            client_id, secret = unquote(client_id), unquote(secret)
            known = self.clients.get(client_id)
            if known is None or known["secret"] != secret:
                return None, "bad basic credentials"
            return client_id, "client_secret_basic"
        if form.get("client_assertion_type"):
            assertion = form.get("client_assertion", "")
            try:
                claims = jwt.decode(
                    assertion,
                    self.behaviour.client_public_key,
                    algorithms=["ES256", "RS256"],
                    audience=issuer,
                )
            except jwt.PyJWTError as exc:
                return None, f"bad assertion: {exc}"
            return claims["sub"], "private_key_jwt"
        client_id = form.get("client_id")
        known = self.clients.get(client_id or "")
        if known is None:
            return None, "unknown client"
        if "client_secret" in form:
            if known["secret"] != form["client_secret"]:
                return None, "bad secret"
            return client_id, "client_secret_post"
        return client_id, "none"

    def token(self, entry: dict[str, Any], issuer_path: str) -> Response:
        b = self.behaviour
        form = entry["form"]
        issuer = self.issuer(issuer_path)
        client_id, how = self._client(entry, issuer)
        entry["client_auth"] = how
        if client_id is None:
            return JSONResponse({"error": "invalid_client", "error_description": how}, 401)
        if how not in b.auth_methods:
            return JSONResponse({"error": "invalid_client", "error_description": how}, 401)
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            request = self.codes.pop(form.get("code", ""), None)
            if request is None or request["client_id"] != client_id:
                return JSONResponse({"error": "invalid_grant"}, 400)
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if challenge != request["code_challenge"]:
                return JSONResponse({"error": "invalid_grant", "error_description": "PKCE"}, 400)
            if form.get("redirect_uri") != request["redirect_uri"]:
                return JSONResponse({"error": "invalid_grant"}, 400)
            grant = Grant(client_id, request["scopes"], form.get("resource"), issuer)
            return self.issue(grant, with_refresh=True)
        if grant_type == "refresh_token":
            grant = self.refresh.get(form.get("refresh_token", ""))
            if grant is None or grant.client_id != client_id:
                return JSONResponse(
                    {"error": "invalid_grant", "error_description": "refresh token revoked"}, 400
                )
            if b.rotate_refresh:
                del self.refresh[form["refresh_token"]]
            return self.issue(grant, with_refresh=b.rotate_refresh)
        if grant_type == "client_credentials":
            scopes = form.get("scope", "").split()
            return self.issue(Grant(client_id, scopes, form.get("resource"), issuer), False)
        return JSONResponse({"error": "unsupported_grant_type"}, 400)

    def issue(self, grant: Grant, with_refresh: bool) -> Response:
        access = f"at-{MARK}-{secrets.token_urlsafe(12)}"
        self.access[access] = (grant, time.time() + self.behaviour.access_ttl)
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.behaviour.access_ttl,
        }
        if grant.scopes:
            answer["scope"] = " ".join(grant.scopes)
        if with_refresh:
            refresh = f"rt-{MARK}-{secrets.token_urlsafe(12)}"
            self.refresh[refresh] = grant
            answer["refresh_token"] = refresh
        return JSONResponse(answer)

    # -- the protected MCP server -----------------------------------------------------------

    def challenge(self, **params: str) -> str:
        b = self.behaviour
        if b.prm_in_challenge:
            params["resource_metadata"] = f"{self.base}/.well-known/oauth-protected-resource/mcp"
            if not b.prm_path_based:
                params["resource_metadata"] = f"{self.base}/.well-known/oauth-protected-resource"
            if b.challenge_metadata:
                params["resource_metadata"] = b.challenge_metadata
        return "Bearer " + ", ".join(f'{k}="{v}"' for k, v in params.items())

    def mcp(self, entry: dict[str, Any]) -> Response:
        b = self.behaviour
        body = entry.get("json") or {}
        method, request_id = body.get("method"), body.get("id")
        authorization = entry["headers"].get("authorization", "")
        token = authorization[7:] if authorization.startswith("Bearer ") else ""
        grant, expires = self.access.get(token, (None, 0.0))
        if grant is None or expires < time.time():
            params = {"error": "invalid_token"}
            if b.challenge_scope:
                params["scope"] = b.challenge_scope
            return JSONResponse(
                {"error": "invalid_token"},
                401,
                headers={"WWW-Authenticate": self.challenge(**params)},
            )
        needed = list(b.method_scopes.get(method, []))
        if b.endless_step_up and method == "tools/call":
            self.step_ups += 1
            needed = [f"scope-{self.step_ups}"]
        missing = [scope for scope in needed if scope not in grant.scopes]
        if missing:
            return JSONResponse(
                {"error": "insufficient_scope"},
                403,
                headers={
                    "WWW-Authenticate": self.challenge(
                        error="insufficient_scope", scope=" ".join(needed)
                    )
                },
            )
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": self.result(method)})

    def result(self, method: str | None) -> dict[str, Any]:
        if method == "server/discover":
            return {
                "resultType": "complete",
                "supportedVersions": [PROTOCOL_VERSION],
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": {
                    "io.modelcontextprotocol/serverInfo": {"name": "oauth-peer", "version": "1"}
                },
            }
        if method == "tools/list":
            tool = {"name": "whoami", "inputSchema": {"type": "object"}}
            return {"resultType": "complete", "tools": [tool], "ttlMs": 0, "cacheScope": "private"}
        return {"resultType": "complete", "content": [{"type": "text", "text": "you"}]}


@contextmanager
def running(behaviour: Behaviour | None = None) -> Iterator[OAuthPeer]:
    """Serve an :class:`OAuthPeer` on loopback for the duration of the block."""
    peer = OAuthPeer(behaviour)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    peer.port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(peer.app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the OAuth peer did not start")
        time.sleep(0.02)
    try:
        yield peer
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
