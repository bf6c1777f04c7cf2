"""MCP's discovery rules: from a server URL (and its 401) to the authorization server.

1. Protected resource metadata (RFC 9728): the ``resource_metadata`` URL of the challenge,
   else the path-based well-known URL, then the root one. Its ``resource`` must identify the
   server, or nothing else is trusted (a server must not send its users' tokens' audience
   elsewhere).
2. Authorization server metadata (RFC 8414 and OpenID Connect Discovery), at the URLs the MCP
   spec lists, well-known segment inserted before the issuer's path; an issuer with a path is
   never looked up at the root. The document's ``issuer`` must equal the issuer used to build
   the URL, character for character.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from .challenge import Challenge
from .errors import DiscoveryError, IssuerMismatch, ResourceMismatch
from .fetch import get_json

__all__ = [
    "Discovery",
    "authorization_server_metadata_urls",
    "discover",
    "protected_resource_metadata_urls",
    "resource_matches",
]

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class Discovery:
    """What discovery found for one server: kept with a connection, shown to operators."""

    server_url: str
    # Exactly as published in the protected resource metadata: sent as RFC 8707 ``resource``.
    resource: str
    resource_metadata: dict[str, Any]
    issuer: str
    server_metadata: dict[str, Any]
    scopes_supported: tuple[str, ...] = ()
    resource_metadata_url: str | None = None
    server_metadata_url: str | None = None

    @property
    def authorization_endpoint(self) -> str | None:
        return _str(self.server_metadata.get("authorization_endpoint"))

    @property
    def token_endpoint(self) -> str | None:
        return _str(self.server_metadata.get("token_endpoint"))

    @property
    def registration_endpoint(self) -> str | None:
        return _str(self.server_metadata.get("registration_endpoint"))

    @property
    def server_scopes(self) -> tuple[str, ...]:
        """The authorization server's ``scopes_supported`` (not the resource's)."""
        return _strings(self.server_metadata.get("scopes_supported"))

    @property
    def auth_methods(self) -> tuple[str, ...]:
        """Token endpoint client authentication methods offered; RFC 8414's default when the
        metadata is silent is ``client_secret_basic``."""
        offered = self.server_metadata.get("token_endpoint_auth_methods_supported")
        return _strings(offered) if offered is not None else ("client_secret_basic",)

    def to_json(self) -> dict[str, Any]:
        return {
            "server_url": self.server_url,
            "resource": self.resource,
            "resource_metadata": self.resource_metadata,
            "issuer": self.issuer,
            "server_metadata": self.server_metadata,
            "scopes_supported": list(self.scopes_supported),
            "resource_metadata_url": self.resource_metadata_url,
            "server_metadata_url": self.server_metadata_url,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Discovery:
        return cls(
            server_url=data["server_url"],
            resource=data["resource"],
            resource_metadata=dict(data.get("resource_metadata") or {}),
            issuer=data["issuer"],
            server_metadata=dict(data.get("server_metadata") or {}),
            scopes_supported=tuple(data.get("scopes_supported") or ()),
            resource_metadata_url=data.get("resource_metadata_url"),
            server_metadata_url=data.get("server_metadata_url"),
        )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str) and item)


def _origin_and_path(url: str) -> tuple[str, str]:
    parsed = httpx.URL(url)
    origin = f"{parsed.scheme}://{parsed.netloc.decode('ascii')}"
    return origin, parsed.raw_path.decode("ascii").split("?", 1)[0].rstrip("/")


def protected_resource_metadata_urls(server_url: str) -> list[str]:
    """RFC 9728 section 3.1 and the MCP spec: path-based first, then the root."""
    origin, path = _origin_and_path(server_url)
    urls = [f"{origin}{PRM_WELL_KNOWN}{path}"] if path else []
    return [*urls, f"{origin}{PRM_WELL_KNOWN}"]


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """The MCP spec's order. With a path: RFC 8414 path-inserted, OIDC path-inserted, OIDC
    path-appended; never the root, which would be another tenant's (or nobody's) metadata."""
    origin, path = _origin_and_path(issuer)
    if path:
        return [
            f"{origin}{OAUTH_WELL_KNOWN}{path}",
            f"{origin}{OIDC_WELL_KNOWN}{path}",
            f"{origin}{path}{OIDC_WELL_KNOWN}",
        ]
    return [f"{origin}{OAUTH_WELL_KNOWN}", f"{origin}{OIDC_WELL_KNOWN}"]


def resource_matches(resource: str, server_url: str) -> bool:
    """Whether the metadata's ``resource`` identifies the server at ``server_url``: the same
    origin, and the server's path equal to or under the resource's path (as the SDKs check:
    a resource may speak for the whole origin)."""
    try:
        res, srv = httpx.URL(resource), httpx.URL(server_url)
    except httpx.InvalidURL:
        return False
    if res.fragment or not res.scheme or not res.host:
        return False
    if (res.scheme, res.host, res.port) != (srv.scheme, srv.host, srv.port):
        return False
    res_path = res.path.rstrip("/")
    srv_path = srv.path.rstrip("/")
    return srv_path == res_path or srv_path.startswith(res_path + "/")


async def _first_document(
    http: httpx.AsyncClient, urls: list[str], what: str
) -> tuple[str, dict[str, Any]]:
    tried: list[str] = []
    for url in urls:
        answer = await get_json(http, url)
        if answer.http_status == 200 and answer.body is not None:
            return url, answer.body
        tried.append(f"{url} (HTTP {answer.http_status})")
    raise DiscoveryError(f"No {what} found; tried {', '.join(tried)}")


async def discover(
    http: httpx.AsyncClient, server_url: str, challenge: Challenge | None = None
) -> Discovery:
    """Find the protected resource metadata and authorization server of ``server_url``.

    Raises :class:`ResourceMismatch`, :class:`IssuerMismatch`, :class:`DiscoveryError` (or
    :class:`~mrtrweb.oauth.errors.Unreachable`).
    """
    if challenge is not None and challenge.resource_metadata:
        # The server said where its metadata is; a guess elsewhere could find another's.
        prm_urls = [challenge.resource_metadata]
    else:
        prm_urls = protected_resource_metadata_urls(server_url)
    prm_url, prm = await _first_document(http, prm_urls, "protected resource metadata")
    resource = prm.get("resource")
    if not isinstance(resource, str) or not resource:
        raise DiscoveryError(f"The protected resource metadata at {prm_url} names no resource")
    if not resource_matches(resource, server_url):
        raise ResourceMismatch(
            f"The protected resource metadata at {prm_url} is for {resource!r}, not for "
            f"{server_url!r}; refusing to authorize for it"
        )
    servers = _strings(prm.get("authorization_servers"))
    if not servers:
        raise DiscoveryError(
            f"The protected resource metadata at {prm_url} names no authorization server"
        )
    issuer = servers[0]
    as_url, metadata = await _first_document(
        http, authorization_server_metadata_urls(issuer), "authorization server metadata"
    )
    if metadata.get("issuer") != issuer:
        raise IssuerMismatch(
            f"The authorization server metadata at {as_url} says its issuer is "
            f"{metadata.get('issuer')!r}, not {issuer!r}; refusing to use it"
        )
    if not _str(metadata.get("token_endpoint")):
        raise DiscoveryError(f"The authorization server metadata at {as_url} has no token_endpoint")
    return Discovery(
        server_url=server_url,
        resource=resource,
        resource_metadata=prm,
        issuer=issuer,
        server_metadata=metadata,
        scopes_supported=_strings(prm.get("scopes_supported")),
        resource_metadata_url=prm_url,
        server_metadata_url=as_url,
    )
