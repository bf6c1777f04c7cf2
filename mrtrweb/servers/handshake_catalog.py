"""Listing the catalog of a handshake-era server (MCP 2025-11-25 or 2025-06-18).

The same catalog shape as a 2026-07-28 server's (mrtrweb/servers/catalog.py), from one
session that is closed (DELETE) before this returns: a probe leaves nothing open. Such a
server has no ``server/discover``: what it is comes from ``initialize``, and its listings
carry no ``ttlMs`` (so they are stale at once, and listed afresh when next needed).
"""

from __future__ import annotations

from typing import Any

from mrtrweb.mcp import ConnectionSettings
from mrtrweb.mcp.handshake import HandshakeClient

__all__ = ["probe_handshake"]


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def probe_handshake(settings: ConnectionSettings) -> tuple[str, dict[str, Any], int]:
    """``("legacy", catalog, ttl_ms)`` for the server at ``settings.url``."""
    async with HandshakeClient(settings) as client:
        found = await client.open()
        tools = await client.list_tools()
        catalog: dict[str, Any] = {
            "server": {
                "protocol_version": found.protocol_version,
                "supported_versions": [found.protocol_version],
                "capabilities": _dump(found.capabilities),
                "instructions": found.instructions or "",
                "info": _dump(found.server_info),
            },
            "tools": [_dump(t) for t in tools.items],
            "dropped_tools": [list(d) for d in tools.dropped],
            "prompts": [],
            "resources": [],
            "resource_templates": [],
        }
        if found.capabilities.prompts is not None:
            catalog["prompts"] = [_dump(p) for p in (await client.list_prompts()).items]
        if found.capabilities.resources is not None:
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
            catalog["resources"] = [_dump(r) for r in resources.items]
            catalog["resource_templates"] = [_dump(t) for t in templates.items]
    return "legacy", catalog, 0
