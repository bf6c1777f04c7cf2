"""Where webhooks may go: the guard against server-side request forgery.

A webhook URL is chosen by whoever holds an API token, and mrtrweb POSTs to it from inside
the deployment's network, so destinations are checked twice:

- when subscribing (:func:`check_url`): ``http``/``https`` only, a host, no user or password
  in the URL (it would be stored and shown in the clear), and, for an IP literal or
  ``localhost``, the address rules below; names are not resolved here (no DNS in a request);
- when connecting (:class:`mrtrweb.webhooks.transport.GuardedBackend`): every address the
  name resolves to must pass, and the connection goes to that vetted address, so a name that
  re-resolves to an internal address between check and use (DNS rebinding) is refused.

Address rules: an address inside ``MRTRWEB_WEBHOOK_ALLOWED_NETWORKS`` is allowed. Otherwise
link-local (169.254.0.0/16, fe80::/10: cloud metadata endpoints live there), multicast,
unspecified and reserved addresses are refused; loopback, private (RFC 1918, fc00::/7), shared
(100.64.0.0/10) and every other non-global address only when ``MRTRWEB_WEBHOOK_ALLOW_PRIVATE``
is on (default: only with ``DEBUG``); public addresses are allowed.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from . import conf

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_URL_LENGTH = 2000


class InvalidWebhookURL(ValueError):
    """A webhook URL that mrtrweb will not send to; the message says why."""


class DestinationRefused(InvalidWebhookURL):
    """A destination address that the deployment's rules refuse."""


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` may not receive webhooks, or ``None`` if it may."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for network in conf.allowed_networks():
        try:
            if address in ipaddress.ip_network(network, strict=False):
                return None
        except ValueError:
            continue  # a malformed entry allows nothing
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


def check_address(address: IPAddress) -> None:
    reason = refusal(address)
    if reason is not None:
        raise DestinationRefused(f"webhook destination refused: {reason}")


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def check_url(url: str) -> str:
    """``url`` if webhooks may be sent to it; raises :class:`InvalidWebhookURL` otherwise."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidWebhookURL("the webhook URL is empty")
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise InvalidWebhookURL(f"the webhook URL is longer than {MAX_URL_LENGTH} characters")
    if any(ord(char) < 33 or ord(char) == 127 for char in url):
        raise InvalidWebhookURL("the webhook URL contains spaces or control characters")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidWebhookURL("a webhook URL must start with http:// or https://")
    if parts.username is not None or parts.password is not None:
        raise InvalidWebhookURL("a webhook URL must not carry a user name or password")
    host = parts.hostname
    if not host:
        raise InvalidWebhookURL("the webhook URL has no host")
    try:
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError:
        raise InvalidWebhookURL("the webhook URL has an invalid port") from None
    address = _literal(host)
    if address is None and (host == "localhost" or host.endswith(".localhost")):
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
