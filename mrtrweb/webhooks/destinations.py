"""Where webhooks may go: the guard against server-side request forgery.

A webhook URL is chosen by whoever holds an API token, and mrtrweb POSTs to it from inside
the deployment's network, so destinations are checked twice:

- when subscribing (:func:`check_url`): the URL is parsed by ``httpx.URL``, as the sender
  will parse it, so a URL the sender could not use is refused here and not in a task later;
  ``http``/``https`` only, a host, no user or password in the URL (it would be stored and
  shown in the clear), no IPv6 zone id, no trailing dot; an IPv4 address only in the usual
  dotted form (``0177.0.0.1``, ``0x7f.1``, ``2130706433`` and ``127.1`` all mean 127.0.0.1 to
  a resolver); and, for an IP literal or ``localhost``, the address rules below; names are
  not resolved here (no DNS in a request);
- when connecting (:class:`mrtrweb.netguard.GuardedBackend`, in :mod:`.transport`): every
  address the name resolves to must pass, and the connection goes to that vetted address, so
  a name that re-resolves to an internal address between check and use (DNS rebinding) is
  refused.

Address rules (:mod:`mrtrweb.netguard.addresses`, shared with OAuth's requests): an address
inside ``MRTRWEB_WEBHOOK_ALLOWED_NETWORKS`` is allowed. Otherwise link-local (169.254.0.0/16,
fe80::/10: cloud metadata endpoints live there), multicast, unspecified and reserved addresses
are refused; loopback, private (RFC 1918, fc00::/7), shared (100.64.0.0/10) and every other
non-global address only when ``MRTRWEB_WEBHOOK_ALLOW_PRIVATE`` is on (default: only with
``DEBUG``); public addresses are allowed. An IPv6 address that carries an IPv4 one
(IPv4-mapped, 6to4, Teredo) is judged by that IPv4 address too.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

import httpx

from mrtrweb import netguard
from mrtrweb.netguard import IPAddress

from . import conf

MAX_URL_LENGTH = 2000
MAX_HOST_LENGTH = 253
MAX_LABEL_LENGTH = 63
# httpx's own split of a URL (httpx/_urlparse.py): the authority runs to the first / ? or #.
_AUTHORITY = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://(?P<authority>[^/?#]*)")
_SCHEME = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*):")
# A label that inet_aton and the WHATWG URL parser read as a number (decimal, octal or hex):
# a host ending in one is an IPv4 address, however it is spelled.
_NUMBER = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$", re.IGNORECASE)
_LABEL = re.compile(r"^[a-z0-9_-]+$", re.IGNORECASE)


class InvalidWebhookURL(ValueError):
    """A webhook URL that mrtrweb will not send to; the message says why."""


class DestinationRefused(InvalidWebhookURL):
    """A destination address that the deployment's rules refuse."""


def rules() -> netguard.Rules:
    """The deployment's address rules for webhooks (read on every use: tests change them)."""
    return netguard.Rules(
        networks=tuple(conf.allowed_networks()),
        allow_private=conf.allow_private(),
        private_hint="MRTRWEB_WEBHOOK_ALLOW_PRIVATE is off on this deployment",
    )


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` may not receive webhooks, or ``None`` if it may."""
    return netguard.refusal(address, rules())


def check_address(address: IPAddress) -> None:
    reason = refusal(address)
    if reason is not None:
        raise DestinationRefused(f"webhook destination refused: {reason}")


def _unusual_ipv4(host: str) -> bool:
    """Whether ``host`` is an IPv4 address in any spelling but the usual dotted quad
    (``0177.0.0.1``, ``0x7f.1``, ``2130706433``, ``127.1``): resolvers read all of them as
    addresses, so each would slip past a check that only knows the usual form."""
    labels = host.rstrip(".").split(".")
    if not _NUMBER.match(labels[-1]):
        return False
    try:
        return str(ipaddress.IPv4Address(host)) != host
    except ValueError:
        return True


def _dotted_form(host: str) -> InvalidWebhookURL:
    return InvalidWebhookURL(
        f"the webhook URL's host {host!r} is an IP address in an unusual spelling (octal, "
        "hex, one number or a short form): write the address in the usual dotted form, "
        "such as 192.0.2.10"
    )


def _parse(url: str) -> httpx.URL:
    """``url`` parsed exactly as the sender will parse it."""
    try:
        return httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:  # IDNA errors are ValueErrors
        try:
            host = urlsplit(url).hostname or ""
        except ValueError:
            host = ""
        if host and _unusual_ipv4(host):
            raise _dotted_form(host) from None
        raise InvalidWebhookURL(f"the webhook URL cannot be used: {exc}") from None


def _check_host_name(host: str) -> None:
    if len(host) > MAX_HOST_LENGTH:
        raise InvalidWebhookURL(
            f"the webhook URL's host is longer than {MAX_HOST_LENGTH} characters"
        )
    for label in host.split("."):
        if not label or len(label) > MAX_LABEL_LENGTH or not _LABEL.match(label):
            raise InvalidWebhookURL(
                f"the webhook URL's host {host!r} is not a valid host name "
                f"(letters, digits and hyphens, in dot-separated parts of 1 to "
                f"{MAX_LABEL_LENGTH} characters)"
            )


def check_url(url: str) -> str:
    """``url`` if webhooks may be sent to it; raises :class:`InvalidWebhookURL` otherwise.

    The URL is parsed by ``httpx.URL``, as the sender parses it, and every check is made on
    what that parse found: a URL the sender could not use, or would read differently from
    another parser, never gets stored.
    """
    if not isinstance(url, str) or not url.strip():
        raise InvalidWebhookURL("the webhook URL is empty")
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise InvalidWebhookURL(f"the webhook URL is longer than {MAX_URL_LENGTH} characters")
    if any(ord(char) < 33 or ord(char) == 127 for char in url):
        raise InvalidWebhookURL("the webhook URL contains spaces or control characters")
    scheme = _SCHEME.match(url)
    authority = _AUTHORITY.match(url)
    if scheme is None or scheme["scheme"].lower() not in ("http", "https") or not authority:
        raise InvalidWebhookURL("a webhook URL must start with http:// or https://")
    if "@" in authority["authority"]:
        raise InvalidWebhookURL("a webhook URL must not carry a user name or password")
    parsed = _parse(url)
    host = parsed.raw_host.decode("ascii").lower()  # IDNA-encoded, as it goes to the resolver
    if not host:
        raise InvalidWebhookURL("the webhook URL has no host")
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise InvalidWebhookURL("the webhook URL has an invalid port")
    if "%" in host:
        if ":" in host:
            raise InvalidWebhookURL("a webhook URL must not carry an IPv6 zone id (%...)")
        raise InvalidWebhookURL("the webhook URL's host must not be percent-encoded")
    if ":" in host:
        check_address(ipaddress.IPv6Address(host))  # httpx checked it is one
        return url
    if host.endswith("."):
        raise InvalidWebhookURL("the webhook URL's host must not end with a dot")
    if _unusual_ipv4(host):
        raise _dotted_form(host)
    address = netguard.literal(host)
    if address is None:
        _check_host_name(host)
        if host == "localhost" or host.endswith(".localhost"):
            address = ipaddress.ip_address("127.0.0.1")
    if address is not None:
        check_address(address)
    return url
