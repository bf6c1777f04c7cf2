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
- when connecting (:class:`mrtrweb.webhooks.transport.GuardedBackend`): every address the
  name resolves to must pass, and the connection goes to that vetted address, so a name that
  re-resolves to an internal address between check and use (DNS rebinding) is refused.

Address rules: an address inside ``MRTRWEB_WEBHOOK_ALLOWED_NETWORKS`` is allowed. Otherwise
link-local (169.254.0.0/16, fe80::/10: cloud metadata endpoints live there), multicast,
unspecified and reserved addresses are refused; loopback, private (RFC 1918, fc00::/7), shared
(100.64.0.0/10) and every other non-global address only when ``MRTRWEB_WEBHOOK_ALLOW_PRIVATE``
is on (default: only with ``DEBUG``); public addresses are allowed. An IPv6 address that
carries an IPv4 one (IPv4-mapped, 6to4, Teredo) is judged by that IPv4 address too.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

import httpx

from . import conf

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
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


def _allowed(address: IPAddress) -> bool:
    for network in conf.allowed_networks():
        try:
            if address in ipaddress.ip_network(network, strict=False):
                return True
        except ValueError:
            continue  # a malformed entry allows nothing
    return False


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address leads to through 6to4 or Teredo (NAT64's
    ``64:ff9b::/96`` needs no look: Python counts all of ``::/8`` reserved)."""
    found: list[ipaddress.IPv4Address] = []
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    return found


def _own_refusal(address: IPAddress) -> str | None:
    if _allowed(address):
        return None
    if address.is_link_local or address.is_multicast or address.is_unspecified:
        return f"{address} is a link-local, multicast or unspecified address"
    if address.is_reserved:
        return f"{address} is a reserved address"
    if not address.is_global and not conf.allow_private():
        return (
            f"{address} is not a public address "
            "(MRTRWEB_WEBHOOK_ALLOW_PRIVATE is off on this deployment)"
        )
    return None


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` may not receive webhooks, or ``None`` if it may."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    reason = _own_refusal(address)
    if reason is not None or not isinstance(address, ipaddress.IPv6Address):
        return reason
    if _allowed(address):
        return None
    # Python calls 6to4 addresses global whatever IPv4 address they carry.
    for inner in _embedded_ipv4(address):
        inner_reason = _own_refusal(inner)
        if inner_reason is not None:
            return f"{address} leads to {inner}: {inner_reason}"
    return None


def check_address(address: IPAddress) -> None:
    reason = refusal(address)
    if reason is not None:
        raise DestinationRefused(f"webhook destination refused: {reason}")


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


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
    address = _literal(host)
    if address is None:
        _check_host_name(host)
        if host == "localhost" or host.endswith(".localhost"):
            address = ipaddress.ip_address("127.0.0.1")
    if address is not None:
        check_address(address)
    return url


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to (an IP literal is its own answer)."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    found: list[IPAddress] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    return found
