"""describe_url(): what the consent screen shows and warns about. Nothing is fetched."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mrtrweb.elicitation import describe_url


def test_plain_https_url_has_no_warnings():
    info = describe_url("https://auth.example.com/connect?state=abc#x")
    assert info.full_url == "https://auth.example.com/connect?state=abc#x"
    assert (info.scheme, info.host, info.port) == ("https", "auth.example.com", None)
    assert info.warnings == ()
    assert info.openable
    assert info.host_unicode is None


def test_host_is_lower_cased_and_port_kept():
    info = describe_url("HTTPS://Auth.Example.COM:8443/x")
    assert (info.scheme, info.host, info.port) == ("https", "auth.example.com", 8443)
    assert info.full_url == "HTTPS://Auth.Example.COM:8443/x"


def test_plain_http_warns_but_opens():
    info = describe_url("http://example.com/")
    assert info.codes == {"plain_http"}
    assert info.openable


def test_punycode_is_flagged_with_its_unicode_look():
    info = describe_url("https://xn--pypal-4ve.com/login")
    assert info.codes == {"punycode"}
    assert info.host == "xn--pypal-4ve.com"
    assert info.host_unicode == "p\u0430ypal.com"  # U+0430 is a Cyrillic a
    assert "displays as" in info.warnings[0].message
    assert info.openable


def test_non_ascii_host_is_flagged_and_shown_in_ascii():
    info = describe_url("https://p\u0430ypal.com/")  # U+0430 is a Cyrillic a
    assert info.codes == {"non_ascii_host"}
    assert info.host.startswith("xn--")
    assert info.host_unicode == "p\u0430ypal.com"
    assert info.openable


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://192.168.0.1/", "192.168.0.1"),
        ("https://[::1]:8080/", "[::1]"),
        ("http://2130706433/", "2130706433"),  # browsers read 127.0.0.1
        ("http://0x7f.1/", "0x7f.1"),
        ("https://10.0.0.1./", "10.0.0.1."),
    ],
)
def test_ip_literals_are_flagged(url, host):
    info = describe_url(url)
    assert "ip_literal" in info.codes
    assert info.host == host


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:8000/",
        "https://printer.local/",
        "https://app.localhost/",
        "https://127.0.0.1/",
        "https://10.1.2.3/",
        "https://[::1]/",
        "https://[fe80::1]/",
        "https://169.254.169.254/latest/meta-data/",
    ],
)
def test_addresses_into_the_persons_own_network_are_flagged(url):
    assert "local_address" in describe_url(url).codes


def test_public_names_are_not_local():
    assert "local_address" not in describe_url("https://example.com/").codes
    assert "local_address" not in describe_url("https://8.8.8.8/").codes


def test_userinfo_is_flagged_and_the_real_host_shown():
    info = describe_url("https://accounts.google.com@evil.example/")
    assert "userinfo" in info.codes
    assert info.host == "evil.example"
    assert "evil.example" in next(w.message for w in info.warnings if w.code == "userinfo")
    assert describe_url("https://user:pw@example.com/").codes == {"userinfo"}


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("javascript:alert(1)", "unsupported_scheme"),
        ("data:text/html,<script>x</script>", "unsupported_scheme"),
        ("file:///etc/passwd", "unsupported_scheme"),
        ("ftp://example.com/", "unsupported_scheme"),
        ("example.com/path", "unsupported_scheme"),
        ("https:example.com", "no_host"),
        ("https:///example.com", "no_host"),
        ("https://evil.example\\@good.example/", "backslash"),
        ("https://good.example /", "control_characters"),
        ("https://good.example\n/", "control_characters"),
        ("https://good\u202eelpmaxe.com/", "invisible_characters"),
        ("https://%65vil.example/", "percent_encoded_host"),
        ("https://[::1/", "unparseable"),
        ("https://example.com:99999/", "unparseable"),
    ],
)
def test_urls_that_must_not_be_offered_as_links(url, code):
    info = describe_url(url)
    assert code in info.codes
    assert not info.openable
    assert info.full_url == url


def test_several_warnings_at_once():
    info = describe_url("http://user@xn--80ak6aa92e.com/")
    assert info.codes == {"plain_http", "userinfo", "punycode"}
    assert info.openable


@given(st.text(max_size=80))
def test_never_raises_and_never_touches_the_network(url):
    info = describe_url(url)
    assert info.full_url == url
    if info.openable:
        assert info.scheme in ("http", "https") and info.host


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("describe_url must not touch the network")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


@given(st.from_regex(r"https?://[a-z0-9.-]{1,20}(:[0-9]{1,4})?(/[a-z]*)?", fullmatch=True))
def test_ordinary_urls(url):
    info = describe_url(url)
    assert info.scheme in ("http", "https")
