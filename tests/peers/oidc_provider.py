"""A tiny OpenID Connect provider on loopback, for the single sign-on tests.

Real HTTP, real RS256 signatures (PyJWT with cryptography), the authorization code flow with
PKCE (S256), a nonce and a state:

- ``GET /.well-known/openid-configuration``: the discovery document;
- ``GET /authorize``: checks the client and its redirect address, auto-approves
  :attr:`OidcProvider.person` and sends the browser back with a one-time code;
- ``POST /token``: checks the client secret, the code, the redirect address and the PKCE
  verifier, and answers with an access token and a signed ID token (``iss``, ``sub``, ``aud``,
  ``exp``, ``iat``, ``nonce``, ``amr`` and the person's claims);
- ``GET /jwks``: the public key; ``GET /userinfo``: the person's claims, for the access token.

A test changes :attr:`~OidcProvider.person` (claims, ``amr``) between sign-ins, and
:attr:`~OidcProvider.tamper` makes the next ID token wrong on purpose (``"signature"``,
``"expired"``, ``"audience"``, ``"issuer"``, ``"nonce"``, ``"foreign_key"``). Served from a
thread of the test process (:meth:`OidcProvider.start`), or on its own with
``python -m tests.peers.oidc_provider --port N --redirect-uri URL``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

CLIENT_ID = "mrtrweb-tests"
CLIENT_SECRET = "oidc-client-secret-for-tests"
KID = "test-key-1"


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class OidcProvider:
    redirect_uris: list[str]
    port: int = 0
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    # The person the provider signs in: userinfo claims, plus "amr" for the ID token only.
    person: dict[str, Any] = field(
        default_factory=lambda: {"sub": "idp-0001", "preferred_username": "ida", "amr": ["pwd"]}
    )
    tamper: str | None = None
    # What the provider was asked, for the tests to check (e.g. PKCE was used).
    seen: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.key = _new_key()
        self._codes: dict[str, dict[str, Any]] = {}
        self._tokens: dict[str, dict[str, Any]] = {}
        self._server: ThreadingHTTPServer | None = None

    # -- serving ------------------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def start(self) -> OidcProvider:
        provider = self

        class Handler(_Handler):
            pass

        Handler.provider = provider
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # -- the protocol -------------------------------------------------------------------------

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwks(self) -> dict[str, Any]:
        public = RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**public, "kid": KID, "alg": "RS256", "use": "sig"}]}

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        self.seen.append({"endpoint": "authorize", **query})
        if query.get("client_id") != self.client_id:
            return 400, {}, {"error": "unauthorized_client"}
        redirect_uri = query.get("redirect_uri", "")
        if redirect_uri not in self.redirect_uris:
            return 400, {}, {"error": "invalid_request", "error_description": "redirect_uri"}
        if query.get("response_type") != "code" or "openid" not in query.get("scope", "").split():
            return 400, {}, {"error": "invalid_request"}
        code = secrets.token_urlsafe(24)
        self._codes[code] = {
            "redirect_uri": redirect_uri,
            "nonce": query.get("nonce"),
            "challenge": query.get("code_challenge"),
            "method": query.get("code_challenge_method"),
            "person": json.loads(json.dumps(self.person)),
        }
        back = {"code": code, "state": query.get("state", "")}
        return 302, {"Location": f"{redirect_uri}?{urlencode(back)}"}, None

    def token(self, form: dict[str, str], authorization: str) -> tuple[int, Any]:
        self.seen.append({"endpoint": "token", **{k: v for k, v in form.items() if k != "code"}})
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if authorization.startswith("Basic "):
            client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
        if client_id != self.client_id or secret != self.client_secret:
            return 401, {"error": "invalid_client"}
        grant = self._codes.pop(form.get("code", ""), None)  # a code works once
        if form.get("grant_type") != "authorization_code" or grant is None:
            return 400, {"error": "invalid_grant"}
        if form.get("redirect_uri") != grant["redirect_uri"]:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri"}
        if grant["challenge"] is not None:
            verifier = form.get("code_verifier", "").encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
            if grant["method"] != "S256" or digest.decode() != grant["challenge"]:
                return 400, {"error": "invalid_grant", "error_description": "PKCE"}
        person = dict(grant["person"])
        amr = person.pop("amr", None)
        access_token = secrets.token_urlsafe(24)
        self._tokens[access_token] = person
        return 200, {
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": self._id_token(person, grant["nonce"], amr),
        }

    def _id_token(self, person: dict[str, Any], nonce: str | None, amr: Any) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            **person,
            "iss": self.issuer,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
        }
        if amr is not None:
            claims["amr"] = amr
        key: Any = self.key
        tamper, self.tamper = self.tamper, None  # once
        if tamper == "expired":
            claims.update(iat=now - 3600, exp=now - 1800)
        elif tamper == "audience":
            claims["aud"] = "someone-else"
        elif tamper == "issuer":
            claims["iss"] = "http://127.0.0.1:9/elsewhere"
        elif tamper == "nonce":
            claims["nonce"] = "not-the-nonce"
        elif tamper == "foreign_key":
            key = _new_key()
        token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})
        if tamper == "signature":
            head, body, _ = token.split(".")
            # The claims say someone else now; the signature is still the old one's.
            forged = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            forged["sub"] = "someone-else"
            body = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
            token = f"{head}.{body}.{token.split('.')[2]}"
        return token

    def userinfo(self, authorization: str) -> tuple[int, Any]:
        person = self._tokens.get(authorization.removeprefix("Bearer ").strip())
        if person is None:
            return 401, {"error": "invalid_token"}
        return 200, person


class _Handler(BaseHTTPRequestHandler):
    provider: OidcProvider

    def log_message(self, format: str, *args: Any) -> None:  # quiet: pytest shows failures
        pass

    def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        provider = self.provider
        if url.path == "/.well-known/openid-configuration":
            self._reply(200, provider.discovery())
        elif url.path == "/jwks":
            self._reply(200, provider.jwks())
        elif url.path == "/authorize":
            status, headers, body = provider.authorize(query)
            self._reply(status, body, headers)
        elif url.path == "/userinfo":
            self._reply(*provider.userinfo(self.headers.get("Authorization", "")))
        else:
            self._reply(404, {"error": "not_found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        if urlsplit(self.path).path == "/token":
            self._reply(*self.provider.token(form, self.headers.get("Authorization", "")))
        else:
            self._reply(404, {"error": "not_found"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--redirect-uri", action="append", required=True)
    args = parser.parse_args()
    provider = OidcProvider(redirect_uris=args.redirect_uri, port=args.port).start()
    print(f"OIDC provider at {provider.issuer}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
