"""The test side of the OAuth peer's controls (``/_test/...`` of tests.peers.oauth_server).

``OAuthControl(peer.base_url)`` (or ``OAuthControl.of(peer)``) reads the peer's log, grants
and tokens, and revokes or expires tokens. Plain httpx, no fastmcp: cheap to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import httpx


class _HasBaseUrl(Protocol):
    @property
    def base_url(self) -> str: ...


@dataclass(frozen=True)
class OAuthControl:
    base_url: str

    @classmethod
    def of(cls, peer: _HasBaseUrl) -> OAuthControl:
        return cls(peer.base_url)

    def _get(self, path: str, **params: Any) -> Any:
        response = httpx.get(f"{self.base_url}/_test/{path}", params=params, timeout=5.0)
        response.raise_for_status()
        return response.json()

    def _post(self, path: str, payload: dict[str, Any]) -> Any:
        response = httpx.post(f"{self.base_url}/_test/{path}", json=payload, timeout=5.0)
        response.raise_for_status()
        return response.json()

    @property
    def issuer(self) -> str:
        return str(self.config()["issuer"])

    @property
    def resource(self) -> str:
        return str(self.config()["resource"])

    def config(self) -> dict[str, Any]:
        return dict(self._get("config"))

    def log(self, kind: str | None = None, since: int = 0) -> list[dict[str, Any]]:
        """Events oldest first: ``kind`` is authorize, token, register or mcp."""
        params: dict[str, Any] = {"since": since}
        if kind is not None:
            params["kind"] = kind
        return list(self._get("log", **params))

    def mark(self) -> int:
        entries = self.log()
        return int(entries[-1]["seq"]) if entries else 0

    def calls(self, tool: str | None = None, since: int = 0) -> list[dict[str, Any]]:
        """The ``tools/call`` requests /mcp received (with the grant of their token)."""
        return [
            entry
            for entry in self.log("mcp", since)
            if entry["rpc_method"] == "tools/call" and (tool is None or entry["tool"] == tool)
        ]

    def grants(self) -> list[dict[str, Any]]:
        return list(self._get("grants"))

    def tokens(self) -> list[dict[str, Any]]:
        """Every token ever issued: token, kind, grant, subject, client_id, status, ..."""
        return list(self._get("tokens"))

    def token_values(self) -> list[str]:
        return [record["token"] for record in self.tokens()]

    def clients(self) -> list[dict[str, Any]]:
        return list(self._get("clients"))

    def cimd_fetches(self) -> list[dict[str, Any]]:
        return list(self._get("cimd-fetches"))

    def set_subject(self, subject: str | None) -> None:
        """Who approves the next authorization requests (``None``: the browser session)."""
        self._post("subject", {"subject": subject})

    def revoke_refresh_tokens(self, subject: str | None = None, access_tokens: bool = False) -> int:
        payload = {"subject": subject, "access_tokens": access_tokens}
        return int(self._post("revoke-refresh-tokens", payload)["revoked"])

    def expire_access_tokens(self, subject: str | None = None) -> int:
        return int(self._post("expire-access-tokens", {"subject": subject})["expired"])
