"""The renewal decisions every authenticator shares (pure rules, no network)."""

from __future__ import annotations

from mrtrweb.oauth import Challenge, Discovery, TokenSet, on_unauthorized, step_up_scopes


def discovery(issuer: str, scopes: tuple[str, ...] = ("read",)) -> Discovery:
    return Discovery(
        server_url="https://mcp.example/mcp",
        resource="https://mcp.example/mcp",
        resource_metadata={},
        issuer=issuer,
        server_metadata={"issuer": issuer, "scopes_supported": ["read", "offline_access"]},
        scopes_supported=scopes,
    )


TOKENS = TokenSet("at", "Bearer", "rt", None, ("read",))
AS1, AS2 = discovery("https://as1.example"), discovery("https://as2.example")


def test_a_401_refreshes_with_the_same_authorization_server() -> None:
    assert on_unauthorized(TOKENS, AS1, AS1) == "refresh"


def test_a_401_authorizes_again_when_refreshing_cannot_help() -> None:
    assert on_unauthorized(TOKENS, AS1, AS2) == "authorize"  # moved
    assert on_unauthorized(None, None, AS1) == "authorize"  # never authorized
    no_refresh = TokenSet("at", "Bearer", None, None, ("read",))
    assert on_unauthorized(no_refresh, AS1, AS1) == "authorize"
    assert on_unauthorized(TOKENS, AS1, AS1, refreshed_after_401=True) == "authorize"


def test_a_step_up_unions_and_stops_when_it_cannot_help() -> None:
    more = Challenge.parse(403, 'Bearer error="insufficient_scope", scope="write"')
    assert step_up_scopes(AS1, more, granted=("read",), previous=("read",)) == (
        "read",
        "write",
        "offline_access",
    )
    held = Challenge.parse(403, 'Bearer error="insufficient_scope", scope="read"')
    assert step_up_scopes(AS1, held, granted=("read",), previous=("read",)) is None
