"""A token for the connection itself, with its own client credentials (no person, no
browser): asked of the authorization server and stored like any other."""

from __future__ import annotations

import httpx

from mrtrweb import oauth
from mrtrweb.servers.models import Connection

from . import store
from .flow import FlowError, discovery_for, run_protocol, save_tokens
from .models import Authorization

__all__ = ["client_credentials_now"]


def client_credentials_now(connection: Connection) -> Authorization:
    """Get a token with the connection's own client credentials, and store it."""
    if not connection.oauth_client_id:
        raise FlowError(f"{connection} has no client ID for the client credentials grant.")
    discovery = discovery_for(connection)
    key = connection.oauth_private_key or None
    identity = store.client_identity(connection, discovery)
    if identity is None:
        raise FlowError(f"{connection} has no client ID for the client credentials grant.")
    # No refresh token comes with client credentials: offline_access is moot.
    scopes = tuple(connection.oauth_scopes.split()) or tuple(
        scope for scope in oauth.choose_scopes(discovery, None) if scope != "offline_access"
    )

    async def job(http: httpx.AsyncClient) -> oauth.TokenSet:
        return await oauth.client_credentials(
            http, discovery, identity, scopes=scopes, private_key_pem=key
        )

    try:
        tokens = run_protocol(connection, job)
    except oauth.OAuthError as exc:
        raise FlowError(f"{connection}: the authorization server gave no token. {exc}") from exc
    return save_tokens(
        connection,
        None,
        Authorization.Kind.CLIENT_CREDENTIALS,
        None,
        discovery.issuer,
        tokens,
        scopes=scopes,
    )
