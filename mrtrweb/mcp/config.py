"""What the client needs to know about one server connection."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata

import mcp_types
from mcp_types.version import LATEST_MODERN_VERSION

from .auth import Authenticator

__all__ = [
    "DEFAULT_CAPABILITIES",
    "ConnectionSettings",
    "default_capabilities",
    "default_client_info",
]

DEFAULT_MAX_RESPONSE_BYTES = 10_000_000
# Deep enough for any real result or schema; far below where parsers and serializers break.
DEFAULT_MAX_JSON_DEPTH = 64
# Seconds to the answer of one request, and the most progress notifications extend it to.
DEFAULT_ANSWER_DEADLINE = 60.0
DEFAULT_ANSWER_DEADLINE_MAX = 600.0


def default_capabilities() -> mcp_types.ClientCapabilities:
    # Both elicitation modes are really implemented (forms and URL visits);
    # sampling and roots are deprecated and deliberately not declared.
    return mcp_types.ClientCapabilities(
        elicitation=mcp_types.ElicitationCapability(
            form=mcp_types.FormElicitationCapability(), url=mcp_types.UrlElicitationCapability()
        )
    )


DEFAULT_CAPABILITIES = default_capabilities()


def default_client_info() -> mcp_types.Implementation:
    return mcp_types.Implementation(name="mrtrweb", title="mrtrweb", version=_version())


@functools.cache
def _version() -> str:
    # Read once: the metadata lookup costs about a millisecond, on every request's settings.
    try:
        return metadata.version("mrtrweb")
    except metadata.PackageNotFoundError:
        return "0"


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """One MCP server endpoint and how to talk to it.

    ``capabilities`` is declared on every request. Keep it identical across the
    rounds of one call: servers must not infer anything from earlier requests,
    and a round answered under different capabilities may be asked differently.
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    bearer_token: str | None = None
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    # How deeply a response (or an SSE event) may nest arrays and objects.
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    # The whole exchange, not per chunk (mrtrweb/mcp/deadline.py); None: no such limit.
    answer_deadline: float | None = DEFAULT_ANSWER_DEADLINE
    answer_deadline_max: float | None = DEFAULT_ANSWER_DEADLINE_MAX
    protocol_version: str = LATEST_MODERN_VERSION
    client_info: mcp_types.Implementation = field(default_factory=default_client_info)
    capabilities: mcp_types.ClientCapabilities = field(default_factory=default_capabilities)
    # Deprecated by the spec (SEP-2577); only sent when set.
    log_level: str | None = None
    # Supplies (and renews) the credential headers of every request (mcp/auth.py); its headers
    # are sent after ``headers`` and ``bearer_token`` and win over them.
    authenticator: Authenticator | None = None
