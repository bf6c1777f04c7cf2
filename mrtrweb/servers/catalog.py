"""Probing a connection and caching what it offers (tools, prompts, resources)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.utils import timezone

from mrtrweb.mcp import Authenticator, AuthorizationRequired, LegacyServer, MCPClient, MCPError

from .handshake_catalog import probe_handshake
from .models import Connection
from .redaction import redact

# Where the OAuth credentials of a listing come from: ``(connection, user)`` -> an
# authenticator, or None. ``mrtrweb.authorizations`` provides it when it is ready (servers sits
# below it and cannot import it); without it, listings go with the static credentials only.
AuthenticatorSource = Callable[[Connection, Any], Authenticator | None]
_source: list[AuthenticatorSource] = []


def provide_authenticators(source: AuthenticatorSource) -> None:
    _source[:] = [source]


def authenticator_for(connection: Connection, user: User) -> Authenticator | None:
    """The authenticator ``user``'s listing of ``connection`` goes with (their own account
    on an OAuth-per-person connection, else the connection's), if OAuth is installed."""
    return _source[0](connection, user) if _source else None


@dataclass
class ProbeReport:
    """What a connection test found: the server's identity and catalog, or the error."""

    ok: bool
    era: str = ""
    server: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    dropped_tools: list[tuple[str, str]] = field(default_factory=list)
    # The server wants credentials that only a person (or an operator) connecting can give.
    authorization_required: bool = False


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _probe(
    connection: Connection, authenticator: Authenticator | None
) -> tuple[str, dict[str, Any], int]:
    settings = replace(connection.client_settings(), authenticator=authenticator)
    async with MCPClient(settings) as client:
        if await client.detect_era() == "legacy":
            return await probe_handshake(settings)
        discovered = await client.discover()
        tools = await client.list_tools(use_cache=False)
        catalog: dict[str, Any] = {
            "server": {
                "protocol_version": client.protocol_version,
                "supported_versions": discovered.supported_versions,
                "capabilities": _dump(discovered.capabilities),
                "instructions": discovered.instructions or "",
                "info": (discovered.meta or {}).get("io.modelcontextprotocol/serverInfo", {}),
            },
            "tools": [_dump(t) for t in tools.items],
            "dropped_tools": [list(d) for d in tools.dropped],
            "prompts": [],
            "resources": [],
            "resource_templates": [],
        }
        ttls = [tools.ttl_ms]
        capabilities = discovered.capabilities
        if capabilities.prompts is not None:
            prompts = await client.list_prompts(use_cache=False)
            catalog["prompts"] = [_dump(p) for p in prompts.items]
            ttls.append(prompts.ttl_ms)
        if capabilities.resources is not None:
            resources = await client.list_resources(use_cache=False)
            templates = await client.list_resource_templates(use_cache=False)
            catalog["resources"] = [_dump(r) for r in resources.items]
            catalog["resource_templates"] = [_dump(t) for t in templates.items]
            ttls += [resources.ttl_ms, templates.ttl_ms]
        return "modern", catalog, min(ttls)


def refresh_catalog(
    connection: Connection, authenticator: Authenticator | None = None
) -> ProbeReport:
    """Probe the server and store its catalog; the report says what was found or what failed.

    ``authenticator`` supplies OAuth credentials (someone's account, or the connection's):
    the catalog is listed with them and kept for everyone who may start calls on it.
    """
    try:
        era, catalog, ttl_ms = async_to_sync(_probe)(connection, authenticator)
    except MCPError as exc:
        era = "legacy" if isinstance(exc, LegacyServer) else connection.era
        error = f"{type(exc).__name__}: {exc}"
        needs_account = isinstance(exc, AuthorizationRequired)
        # A server that asks for an account answered: the test passed, and each person
        # connects their own. Anything else is a failure end users must not meet.
        failure = "" if needs_account else _failure_text(error, connection)
        tested_at = timezone.now()
        Connection.objects.filter(pk=connection.pk).update(
            era=era, tested_at=tested_at, test_failure=failure
        )
        connection.era = era
        connection.tested_at = tested_at
        connection.test_failure = failure
        return ProbeReport(
            ok=False,
            era=era,
            error=error,
            authorization_required=needs_account,
        )
    now = timezone.now()
    connection.era = era
    connection.catalog = catalog
    connection.catalog_fetched_at = now
    connection.catalog_expires_at = now + timedelta(milliseconds=ttl_ms)
    connection.tested_at = now
    connection.test_failure = ""
    connection.save(
        update_fields=[
            "era",
            "catalog",
            "catalog_fetched_at",
            "catalog_expires_at",
            "tested_at",
            "test_failure",
        ]
    )
    return ProbeReport(
        ok=True,
        era=era,
        server=catalog["server"],
        counts={k: len(catalog[k]) for k in ("tools", "prompts", "resources")},
        dropped_tools=[tuple(d) for d in catalog["dropped_tools"]],
    )


def _failure_text(error: str, connection: Connection) -> str:
    """What the operators' pages say of a failed test: the error, its secrets blanked, short."""
    limit = Connection._meta.get_field("test_failure").max_length or 500
    text = " ".join(redact(error, connection).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def ensure_catalog(
    connection: Connection, authenticator: Authenticator | None = None
) -> ProbeReport | None:
    """Refresh the catalog when it has expired (per the server's ttlMs); None when fresh."""
    if connection.catalog_is_fresh():
        return None
    return refresh_catalog(connection, authenticator)
