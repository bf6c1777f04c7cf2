"""Which IP addresses a set of rules allows.

An address inside one of the rules' ``networks`` is allowed. Otherwise link-local
(169.254.0.0/16, fe80::/10: cloud metadata endpoints live there), multicast, unspecified and
reserved addresses are refused; loopback, private (RFC 1918, fc00::/7), shared (100.64.0.0/10)
and every other non-global address only when the rules ``allow_private``; public addresses
are allowed. An IPv6 address that carries an IPv4 one (IPv4-mapped, 6to4, Teredo) is judged
by that IPv4 address too.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Rules:
    """``networks``: CIDR strings allowed whatever else is said (a malformed one allows
    nothing); ``allow_private``: non-global addresses allowed; ``private_hint``: what the
    refusal of a private address adds, such as the setting that would allow it."""

    networks: tuple[str, ...] = ()
    allow_private: bool = False
    private_hint: str = ""


def _allowed(address: IPAddress, rules: Rules) -> bool:
    for network in rules.networks:
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


def _own_refusal(address: IPAddress, rules: Rules) -> str | None:
    if _allowed(address, rules):
        return None
    if address.is_link_local or address.is_multicast or address.is_unspecified:
        return f"{address} is a link-local, multicast or unspecified address"
    if address.is_reserved:
        return f"{address} is a reserved address"
    if not address.is_global and not rules.allow_private:
        hint = f" ({rules.private_hint})" if rules.private_hint else ""
        return f"{address} is not a public address{hint}"
    return None


def refusal(address: IPAddress, rules: Rules) -> str | None:
    """Why ``address`` may not be connected to under ``rules``, or ``None`` if it may."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    reason = _own_refusal(address, rules)
    if reason is not None or not isinstance(address, ipaddress.IPv6Address):
        return reason
    if _allowed(address, rules):
        return None
    # Python calls 6to4 addresses global whatever IPv4 address they carry.
    for inner in _embedded_ipv4(address):
        inner_reason = _own_refusal(inner, rules)
        if inner_reason is not None:
            return f"{address} leads to {inner}: {inner_reason}"
    return None


def literal(host: str) -> IPAddress | None:
    """``host`` as an IP address, when it is one written out (brackets allowed)."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to (an IP literal is its own answer)."""
    written = literal(host)
    if written is not None:
        return [written]
    found: list[IPAddress] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    return found
