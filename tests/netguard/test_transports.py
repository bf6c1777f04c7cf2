"""The guarded transports against a real HTTP server on 127.0.0.1: requests and streamed
answers go through, the address rules refuse before connecting, and httpcore's failures come
out as httpx's, a refusal still told apart from the network's."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpcore
import httpx
import pytest

from mrtrweb import netguard
from tests.netguard.server import CHUNKS, Server, running

ALLOWED = netguard.Rules(allow_private=True)
REFUSING = netguard.Rules()  # public addresses only: 127.0.0.1 is refused
TIMEOUT = httpx.Timeout(5.0, read=0.3, pool=0.5)


@pytest.fixture
def server() -> Iterator[Server]:
    with running() as state:
        yield state


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def client(rules: netguard.Rules, *, max_connections: int = 1) -> httpx.Client:
    backend = netguard.GuardedBackend(rules)
    transport = netguard.sync_transport(backend, max_connections=max_connections)
    return httpx.Client(transport=transport, timeout=TIMEOUT)


def async_client(rules: netguard.Rules) -> httpx.AsyncClient:
    backend = netguard.AsyncGuardedBackend(rules)
    transport = netguard.async_transport(backend, verify=httpx.create_ssl_context())
    return httpx.AsyncClient(transport=transport, timeout=TIMEOUT)


# Synchronous


def test_a_get_streams_its_body(server: Server) -> None:
    with client(ALLOWED) as http, http.stream("GET", server.url("/chunks")) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/plain"
        assert response.headers["transfer-encoding"] == "chunked"
        assert b"".join(response.iter_bytes()) == b"".join(CHUNKS)
    assert server.paths == ["/chunks"]


def test_a_post_sends_its_body_and_headers(server: Server) -> None:
    with client(ALLOWED) as http:
        response = http.post(server.url("/echo"), content=b"payload", headers={"X-Test": "yes"})
    assert (response.status_code, response.content) == (201, b"payload")
    assert response.headers["x-echo"] == "yes"


def test_a_refused_address_is_never_connected_to(server: Server) -> None:
    with client(REFUSING) as http, pytest.raises(httpx.ConnectError) as caught:
        http.get(server.url("/chunks"))
    assert netguard.was_refused(caught.value)
    assert isinstance(caught.value.__cause__, netguard.Refused)
    assert "127.0.0.1 is not a public address" in str(caught.value)
    assert server.paths == []


def test_a_silent_server_is_a_read_timeout(server: Server) -> None:
    with client(ALLOWED) as http, pytest.raises(httpx.ReadTimeout) as caught:
        http.get(server.url("/stall"))
    assert isinstance(caught.value.__cause__, httpcore.ReadTimeout)
    assert not netguard.was_refused(caught.value)


def test_a_closed_port_is_a_connect_error_not_a_refusal() -> None:
    with client(ALLOWED) as http, pytest.raises(httpx.ConnectError) as caught:
        http.get(f"http://127.0.0.1:{closed_port()}/")
    assert isinstance(caught.value.__cause__, httpcore.ConnectError)
    assert not netguard.was_refused(caught.value)


def test_a_body_cut_short_is_a_remote_protocol_error(server: Server) -> None:
    with client(ALLOWED) as http, pytest.raises(httpx.RemoteProtocolError) as caught:
        http.get(server.url("/short"))
    assert isinstance(caught.value.__cause__, httpcore.RemoteProtocolError)


def test_a_response_closed_unread_gives_its_connection_back(server: Server) -> None:
    # One connection only: were the body's close not passed on, the second request would
    # wait for it until the pool timeout.
    with client(ALLOWED, max_connections=1) as http:
        with http.stream("GET", server.url("/chunks")) as response:
            assert response.status_code == 200
        assert http.get(server.url("/chunks")).content == b"".join(CHUNKS)


def test_closing_the_client_closes_the_pool(server: Server) -> None:
    transport = netguard.sync_transport(netguard.GuardedBackend(ALLOWED))
    with httpx.Client(transport=transport) as http:
        http.get(server.url("/chunks"))
        assert len(transport.pool.connections) == 1
    assert transport.pool.connections == []


def test_the_environment_proxy_is_not_used(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy would be the only address the backend vetted; this one does not even listen.
    proxy = f"http://127.0.0.1:{closed_port()}"
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, proxy)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    transport = netguard.sync_transport(netguard.GuardedBackend(ALLOWED))
    with httpx.Client(transport=transport, trust_env=True) as http:
        assert http.get(server.url("/chunks")).status_code == 200
    assert server.paths == ["/chunks"]


# Asynchronous


async def test_async_a_get_streams_its_body(server: Server) -> None:
    async with (
        async_client(ALLOWED) as http,
        http.stream("GET", server.url("/chunks")) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/plain"
        assert b"".join([part async for part in response.aiter_bytes()]) == b"".join(CHUNKS)


async def test_async_a_post_sends_its_body_and_headers(server: Server) -> None:
    async with async_client(ALLOWED) as http:
        response = await http.post(
            server.url("/echo"), content=b"payload", headers={"X-Test": "yes"}
        )
    assert (response.status_code, response.content) == (201, b"payload")
    assert response.headers["x-echo"] == "yes"


async def test_async_a_refused_address_is_never_connected_to(server: Server) -> None:
    async with async_client(REFUSING) as http:
        with pytest.raises(httpx.ConnectError) as caught:
            await http.get(server.url("/chunks"))
    assert netguard.was_refused(caught.value)
    assert isinstance(caught.value.__cause__, netguard.Refused)
    assert server.paths == []


async def test_async_a_silent_server_is_a_read_timeout(server: Server) -> None:
    async with async_client(ALLOWED) as http:
        with pytest.raises(httpx.ReadTimeout) as caught:
            await http.get(server.url("/stall"))
    assert isinstance(caught.value.__cause__, httpcore.ReadTimeout)
    assert not netguard.was_refused(caught.value)


async def test_async_a_closed_port_is_a_connect_error_not_a_refusal() -> None:
    async with async_client(ALLOWED) as http:
        with pytest.raises(httpx.ConnectError) as caught:
            await http.get(f"http://127.0.0.1:{closed_port()}/")
    assert not netguard.was_refused(caught.value)


async def test_async_a_body_cut_short_is_a_remote_protocol_error(server: Server) -> None:
    async with async_client(ALLOWED) as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.get(server.url("/short"))


async def test_async_closing_the_client_closes_the_pool(server: Server) -> None:
    backend = netguard.AsyncGuardedBackend(ALLOWED)
    transport = netguard.async_transport(backend, verify=httpx.create_ssl_context())
    async with httpx.AsyncClient(transport=transport) as http:
        async with http.stream("GET", server.url("/chunks")) as response:
            await response.aread()
        assert len(transport.pool.connections) == 1
    assert transport.pool.connections == []
