"""What a connection test found, in words an operator can act on (the console and the API
show the same summary)."""

from __future__ import annotations

from typing import Any

from .catalog import ProbeReport
from .models import Connection
from .redaction import redact


def failure_kind(report: ProbeReport) -> str:
    return report.error.split(":", 1)[0] if report.error else "error"


# What each failure means for the operator; keyed by the client's exception class name, which
# refresh_catalog() puts in front of the message.
FAILURES: dict[str, tuple[str, str]] = {
    "LegacyServer": (
        "legacy",
        "This server speaks a handshake-era MCP (2025-11-25 or older), and mrtrweb could not "
        "complete the handshake with it.",
    ),
    "AuthenticationRequired": (
        "auth",
        "The server did not accept the credentials. Set or replace the bearer token "
        "(or the header the server expects) and test again.",
    ),
    "AuthorizationRequired": (
        "auth",
        "The server asks who is calling (OAuth). Choose how mrtrweb authenticates in the "
        "settings: usually “each person connects their own account”; then test again.",
    ),
    "NotDelivered": (
        "unreachable",
        "The server is not reachable: nothing accepted the connection at this URL "
        "(refused, unknown host or connect timeout).",
    ),
    "ServerBusy": (
        "busy",
        "The server is up but declined the request for now (429 Too Many Requests or 503 "
        "Service Unavailable). Test again later; calls retry such rounds on their own.",
    ),
    "OutcomeUnknown": (
        "no_answer",
        "The server took the request but no complete answer came back (read timeout, or "
        "the connection broke).",
    ),
    "DeadlineExceeded": (
        "no_answer",
        "The server did not answer within this connection's answer deadline (keep-alives do "
        "not extend it; progress notifications do, up to the longest answer with progress).",
    ),
    "Redirected": (
        "redirect",
        "The server answered with a redirect. mrtrweb does not follow redirects (the request "
        "and its credentials would go elsewhere): if the new address is the server's, put it "
        "in the URL field.",
    ),
    "ResponseTooLarge": (
        "too_large",
        "The server's answer is larger than this connection's max response size.",
    ),
    "TooDeeplyNested": (
        "too_deep",
        "The server's answer nests arrays and objects deeper than mrtrweb reads "
        "(MRTRWEB_MAX_JSON_DEPTH, 64 levels by default).",
    ),
    "UnsupportedProtocolVersion": (
        "version",
        "The server does not speak MCP 2026-07-28.",
    ),
}
GENERIC_FAILURE = ("protocol", "The server answered something mrtrweb cannot use.")


# A refusal on an OAuth connection: what to do, by how the connection authenticates.
OAUTH_FAILURES: dict[str, str] = {
    Connection.Auth.OAUTH_PERSON: "The server asks who is calling: each person connects their "
    "own account the first time they use it. To list the catalog now, connect your own "
    "account, then test again. If the server expects a static token instead, choose “A "
    "static token or headers” in the settings and enter it.",
    Connection.Auth.OAUTH_SHARED: "The server asks who is calling: connect the shared "
    "account (an operator signs in once for everyone), then test again.",
    Connection.Auth.CLIENT_CREDENTIALS: "The authorization server gave no usable token for "
    "the client credentials: check the client ID, secret or key and the scopes, then get a "
    "token on the OAuth page.",
}


def probe_summary(report: ProbeReport, connection: Connection) -> dict[str, Any]:
    """What the result panel shows, from the probe report and the stored catalog."""
    if not report.ok and report.authorization_required and connection.auth in OAUTH_FAILURES:
        return {
            "ok": False,
            "kind": "oauth",
            "explanation": OAUTH_FAILURES[connection.auth],
            "error": redact(report.error, connection),
            "connect": connection.auth != Connection.Auth.CLIENT_CREDENTIALS,
        }
    if not report.ok:
        kind, explanation = FAILURES.get(failure_kind(report), GENERIC_FAILURE)
        if kind == "auth" and "(403)" in report.error:
            explanation = (
                "The server refused access (403): the credentials are valid but lack "
                "permission (scope) for MCP. Use a token with more rights."
            )
        error = redact(report.error, connection)
        return {"ok": False, "kind": kind, "explanation": explanation, "error": error}
    server = report.server
    info = server.get("info") or {}
    capabilities = server.get("capabilities") or {}
    return {
        "ok": True,
        "name": info.get("name", ""),
        "title": info.get("title", ""),
        "version": info.get("version", ""),
        "era": report.era,
        "protocol_version": server.get("protocol_version", ""),
        "supported_versions": server.get("supported_versions") or [],
        "capabilities": [
            {"name": key, "options": sorted(value) if isinstance(value, dict) else []}
            for key, value in sorted(capabilities.items())
        ],
        "instructions": server.get("instructions", ""),
        "counts": report.counts,
        "templates": len(connection.catalog.get("resource_templates") or []),
        "dropped_tools": report.dropped_tools,
    }
