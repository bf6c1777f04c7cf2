from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from mrtrweb.mcp import ConnectionSettings, MCPClient, forget_era
from mrtrweb.oauth.headless import HeadlessAuthenticator
from tests.oauth.server import Behaviour, OAuthPeer, running

REDIRECT_URI = "http://127.0.0.1/oauth/callback"


@pytest.fixture
def oauth_peer() -> Iterator[Callable[..., OAuthPeer]]:
    """``oauth_peer(**behaviour)``: a real authorization server and protected MCP server."""
    with ExitStack() as stack:

        def start(**behaviour: Any) -> OAuthPeer:
            return stack.enter_context(running(Behaviour(**behaviour)))

        yield start


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


def headless(http: httpx.AsyncClient, peer: OAuthPeer, **options: Any) -> HeadlessAuthenticator:
    return HeadlessAuthenticator(http, peer.url, redirect_uri=REDIRECT_URI, **options)


def mcp_client(peer: OAuthPeer, authenticator: Any) -> MCPClient:
    forget_era(peer.url)
    return MCPClient(ConnectionSettings(url=peer.url, authenticator=authenticator))
