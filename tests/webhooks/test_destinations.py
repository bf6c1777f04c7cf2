"""Where webhooks may go: URL rules when subscribing, address rules when connecting."""

from __future__ import annotations

import ipaddress

import httpx
import pytest

from mrtrweb.webhooks import InvalidWebhookURL
from mrtrweb.webhooks.destinations import check_url, refusal
from mrtrweb.webhooks.transport import client, was_refused

from .receiver import running_receiver


@pytest.fixture
def public_only(settings):
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = False
    settings.MRTRWEB_WEBHOOK_ALLOWED_NETWORKS = []


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.com/hook", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("javascript:alert(1)", "http:// or https://"),
        ("https://user:pw@example.com/hook", "user name or password"),
        ("https:///hook", "no host"),
        ("https://example.com:99999/hook", "invalid port"),
        ("https://exa mple.com/hook", "spaces"),
        ("", "empty"),
        ("https://example.com/" + "x" * 2000, "longer than"),
    ],
)
def test_urls_that_are_refused_when_subscribing(url: str, why: str) -> None:
    with pytest.raises(InvalidWebhookURL, match=why):
        check_url(url)


@pytest.mark.usefixtures("public_only")
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://api.localhost/hook",
        "http://[::1]/hook",
        "http://10.0.0.5/hook",
        "http://192.168.1.1/hook",
        "http://100.64.0.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
    ],
)
def test_internal_addresses_are_refused_by_default(url: str) -> None:
    with pytest.raises(InvalidWebhookURL, match="refused"):
        check_url(url)


@pytest.mark.usefixtures("public_only")
def test_public_addresses_and_names_pass() -> None:
    assert check_url("https://1.1.1.1/x") == "https://1.1.1.1/x"
    # Documentation ranges are not public either.
    assert refusal(ipaddress.ip_address("203.0.113.9")) is not None
    assert check_url(" https://hooks.example.com/x?a=1 ") == "https://hooks.example.com/x?a=1"
    assert refusal(ipaddress.ip_address("8.8.8.8")) is None


def test_allow_private_opens_loopback_and_private_but_never_link_local(settings) -> None:
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = True
    settings.MRTRWEB_WEBHOOK_ALLOWED_NETWORKS = []
    assert refusal(ipaddress.ip_address("127.0.0.1")) is None
    assert refusal(ipaddress.ip_address("10.1.2.3")) is None
    assert refusal(ipaddress.ip_address("169.254.169.254")) is not None
    assert refusal(ipaddress.ip_address("fe80::1")) is not None


@pytest.mark.usefixtures("public_only")
def test_allowed_networks_open_exactly_those_networks(settings) -> None:
    settings.MRTRWEB_WEBHOOK_ALLOWED_NETWORKS = ["10.2.0.0/16", "not a network"]
    assert refusal(ipaddress.ip_address("10.2.9.9")) is None
    assert refusal(ipaddress.ip_address("10.3.0.1")) is not None


def test_the_environment_sets_the_rule_when_settings_do_not(settings, monkeypatch) -> None:
    for name in ("MRTRWEB_WEBHOOK_ALLOW_PRIVATE", "MRTRWEB_WEBHOOK_ALLOWED_NETWORKS"):
        if hasattr(settings, name):
            delattr(settings, name)
    settings.DEBUG = False
    assert refusal(ipaddress.ip_address("127.0.0.1")) is not None
    monkeypatch.setenv("MRTRWEB_WEBHOOK_ALLOW_PRIVATE", "1")
    assert refusal(ipaddress.ip_address("127.0.0.1")) is None
    monkeypatch.delenv("MRTRWEB_WEBHOOK_ALLOW_PRIVATE")
    settings.DEBUG = True
    assert refusal(ipaddress.ip_address("127.0.0.1")) is None


@pytest.mark.usefixtures("public_only")
def test_the_connection_itself_is_guarded(settings) -> None:
    """The network backend refuses a loopback address even if the URL check was bypassed
    (as a name re-resolving to it would): the receiver never sees a request."""
    with running_receiver("x") as receiver:
        with client(2.0) as http, pytest.raises(httpx.ConnectError) as caught:
            http.post(receiver.url(), content=b"{}")
        assert was_refused(caught.value)
        assert receiver.received == []
        settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = True
        with client(2.0) as http:
            assert http.post(receiver.url(), content=b"{}").status_code == 401
        assert len(receiver.received) == 1


def test_redirects_are_not_followed(settings) -> None:
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = True
    with running_receiver("x", plan=[302]) as receiver, client(2.0) as http:
        assert http.post(receiver.url(), content=b"{}").status_code == 302
        assert len(receiver.received) == 1
