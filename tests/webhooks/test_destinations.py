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


# Every way of writing 127.0.0.1 that a resolver (inet_aton) or a browser accepts, and the
# parser tricks around a host: refused whatever MRTRWEB_WEBHOOK_ALLOW_PRIVATE says, each
# with its reason.
ODD_URLS = [
    ("http://0177.0.0.1/hook", "usual dotted form"),  # octal: httpx itself cannot parse it
    ("http://0x7f.1/hook", "usual dotted form"),  # hex, short form
    ("http://0x7f.0x0.0x0.0x1/hook", "usual dotted form"),
    ("http://0x7f000001/hook", "usual dotted form"),
    ("http://2130706433/hook", "usual dotted form"),  # one integer
    ("http://127.1/hook", "usual dotted form"),  # short form
    ("http://127.0.1/hook", "usual dotted form"),
    ("http://0/hook", "usual dotted form"),
    ("http://1.2.3.256/hook", "usual dotted form"),
    ("http://1.2.3.4.5/hook", "usual dotted form"),
    ("http://127.0.0.1./hook", "end with a dot"),
    ("http://localhost./hook", "end with a dot"),
    ("http://hooks.example.com./hook", "end with a dot"),
    ("http://[fe80::1%25eth0]/hook", "zone id"),
    ("http://[fe80::1%eth0]/hook", "zone id"),
    ("http://%31%32%37.0.0.1/hook", "percent-encoded"),
    ("http://@hooks.example.com/hook", "user name or password"),
    ("http://:@hooks.example.com/hook", "user name or password"),
    ("http://hooks.example.com\\@127.0.0.1/hook", "user name or password"),
    ("http://hooks.example.com:0/hook", "invalid port"),
    ("http://[::1/hook", "cannot be used"),
    ("http://[v1.x]/hook", "cannot be used"),
    ("http://hooks..example.com/hook", "not a valid host name"),
    ("http://" + "a" * 64 + ".example.com/hook", "not a valid host name"),
    ("http://hooks!.example.com/hook", "not a valid host name"),
    ("http://" + "a." * 127 + "com/hook", "longer than 253"),
    ("http:hooks.example.com", "http:// or https://"),
    ("gopher://hooks.example.com/", "http:// or https://"),
]


@pytest.mark.parametrize(("url", "why"), ODD_URLS)
def test_odd_spellings_are_refused_even_where_private_addresses_are_allowed(
    settings, url: str, why: str
) -> None:
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = True
    with pytest.raises(InvalidWebhookURL, match=why):
        check_url(url)


@pytest.mark.usefixtures("public_only")
@pytest.mark.parametrize(
    ("url", "leads_to"),
    [
        ("http://[::ffff:127.0.0.1]/hook", "127.0.0.1"),  # IPv4-mapped, dotted
        ("http://[::ffff:7f00:1]/hook", "127.0.0.1"),  # IPv4-mapped, hex
        ("http://[::ffff:a9fe:a9fe]/hook", "169.254.169.254"),
        ("http://[2002:7f00:1::]/hook", "127.0.0.1"),  # 6to4
        ("http://[2002:a9fe:a9fe::]/hook", "169.254.169.254"),
    ],
)
def test_ipv6_spellings_of_internal_ipv4_addresses_are_refused(url: str, leads_to: str) -> None:
    with pytest.raises(InvalidWebhookURL, match="refused") as caught:
        check_url(url)
    assert leads_to in str(caught.value)


def test_what_the_sender_parses_is_what_was_checked(settings) -> None:
    """Each URL that passes is one httpx parses, with the host that was checked."""
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = False
    for url in [
        "https://hooks.example.com/x?a=1#f",
        "https://HOOKS.Example.COM:8443/x",
        "https://bücher.example/hook",
        "https://_hooks.example.com/",
        "http://8.8.8.8:8080/a",
        "http://[2606:4700:4700::1111]/hook",
    ]:
        assert check_url(url) == url
        assert httpx.URL(url).host


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
