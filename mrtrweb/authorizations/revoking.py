"""Disconnecting: an authorization's tokens forgotten here, and revoked at its
authorization server when that server publishes how (RFC 7009)."""

from __future__ import annotations

import base64
from urllib.parse import quote_plus

import httpx

from . import store
from .flow import run_protocol, stored_discovery
from .models import Authorization

__all__ = ["NOT_CONFIRMED", "NOT_OFFERED", "revoke"]


NOT_OFFERED = "publishes no way to revoke tokens; mrtrweb forgot them"
NOT_CONFIRMED = "did not confirm that it revoked them; mrtrweb forgot them"


def revoke(authorization: Authorization) -> str:
    """Forget an authorization's tokens here, and ask its authorization server to revoke
    them when it publishes a revocation endpoint (RFC 7009). ``""`` when the server
    revoked them, else what the authorization server did, in words.

    The tokens are deleted first: whatever the server answers, mrtrweb no longer holds them.
    """
    connection = authorization.connection
    _, discovery = stored_discovery(connection)
    tokens = [
        (token, hint)
        for token, hint in (
            (authorization.refresh_token, "refresh_token"),
            (authorization.access_token, "access_token"),
        )
        if token
    ]
    client_pk = authorization.client_id
    authorization.delete()
    if not tokens:
        return ""
    endpoint = discovery.server_metadata.get("revocation_endpoint") if discovery else None
    if (
        discovery is None
        or not isinstance(endpoint, str)
        or not endpoint.startswith(("https://", "http://"))
    ):
        return NOT_OFFERED
    # The client the tokens were issued to (for client credentials: the operator's).
    identity = store.client_identity(connection, discovery, client_id=client_pk)
    if identity is None:
        return NOT_CONFIRMED

    async def job(http: httpx.AsyncClient) -> bool:
        ok = True
        for token, hint in tokens:
            data = {"token": token, "token_type_hint": hint}
            headers = {}
            if identity.token_endpoint_auth_method == "client_secret_basic":
                # RFC 6749 section 2.3.1: each part form-encoded before the Basic encoding.
                pair = (
                    f"{quote_plus(identity.client_id)}:{quote_plus(identity.client_secret or '')}"
                )
                headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
            else:
                data["client_id"] = identity.client_id
                if identity.token_endpoint_auth_method == "client_secret_post":
                    data["client_secret"] = identity.client_secret or ""
            try:
                response = await http.post(endpoint, data=data, headers=headers)
            except httpx.HTTPError:
                ok = False
                continue
            ok = ok and response.status_code == 200
        return ok

    return "" if run_protocol(connection, job) else NOT_CONFIRMED
