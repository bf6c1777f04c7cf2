"""What one destination trusts beyond the address rules, and the check of a URL before it is
requested.

An MCP connection's OAuth requests go to URLs its server and authorization server chose.
They are held to the address rules (public addresses only) except for the connection's own
origin, which its operator chose, and what the operator allows for that connection: host
names (trusted as the origin is, on any port) and networks (their addresses allowed as public
ones are, still vetted at connect time).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

import httpx

from .addresses import Rules, literal, refusal
from .backends import RefusedURL

MAX_ENTRIES = 50
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")
DEFAULT_PORTS = {"http": 80, "https": 443}


class InvalidAllowance(ValueError):
    """An entry of an operator's list that is neither a host name nor an address or network."""


def _host_name(entry: str) -> str | None:
    name = entry.lower().rstrip(".")
    if len(name) > 253 or not all(_LABEL.match(label) for label in name.split(".")):
        return None
    return name


def parse_allowance(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """An operator's list (one entry a line, or separated by spaces or commas) as host names
    and networks; raises :class:`InvalidAllowance` naming the first entry that is neither."""
    names: list[str] = []
    networks: list[str] = []
    entries = [entry for entry in re.split(r"[\s,]+", text) if entry]
    if len(entries) > MAX_ENTRIES:
        raise InvalidAllowance(f"At most {MAX_ENTRIES} entries.")
    for entry in entries:
        try:
            network = ipaddress.ip_network(entry.strip("[]"), strict=False)
        except ValueError:
            network = None
        if network is not None:
            networks.append(str(network))
            continue
        name = _host_name(entry)
        if name is None or name.replace(".", "").isdigit():
            raise InvalidAllowance(
                f"{entry!r} is neither a host name (such as auth.example.com) nor an IP "
                "address or network (such as 10.0.0.0/8)."
            )
        names.append(name)
    return tuple(dict.fromkeys(names)), tuple(dict.fromkeys(networks))


def _endpoint(url: httpx.URL) -> tuple[str, int] | None:
    scheme = url.scheme.lower()
    if scheme not in DEFAULT_PORTS or not url.host:
        return None
    return url.host.lower(), url.port or DEFAULT_PORTS[scheme]


@dataclass(frozen=True)
class Allowance:
    """``endpoints``: (host, port) pairs trusted as they are (an origin's); ``names``: host
    names trusted on any port; ``networks``: CIDR strings allowed besides public addresses."""

    endpoints: frozenset[tuple[str, int]] = frozenset()
    names: frozenset[str] = frozenset()
    networks: tuple[str, ...] = ()

    @classmethod
    def of(cls, origin_url: str, allowed: str = "") -> Allowance:
        """The allowance of a destination whose own URL is ``origin_url`` (its origin is
        trusted) and whose operator allowed ``allowed`` (:func:`parse_allowance`; entries
        that do not parse allow nothing)."""
        try:
            names, networks = parse_allowance(allowed)
        except InvalidAllowance:
            names, networks = (), ()
        try:
            own = _endpoint(httpx.URL(origin_url))
        except (httpx.InvalidURL, ValueError):
            own = None
        return cls(
            endpoints=frozenset([own] if own else []),
            names=frozenset(names),
            networks=networks,
        )

    def rules(self) -> Rules:
        return Rules(
            networks=self.networks,
            allow_private=False,
            private_hint="not allowed for this connection",
        )

    def trusts(self, host: str, port: int) -> bool:
        host = host.lower().strip("[]")
        return host in self.names or any(
            host == own_host.strip("[]") and port == own_port
            for own_host, own_port in self.endpoints
        )


def vet_url(url: httpx.URL, allowance: Allowance, *, request: httpx.Request | None = None) -> None:
    """Refuse ``url`` before anything is sent when it is not http(s), or its host is an IP
    address the rules refuse (a host name is vetted when connecting, by the backend)."""
    endpoint = _endpoint(url)
    if endpoint is None:
        raise RefusedURL(f"refused: {url.scheme}: is not http or https", request=request)
    if allowance.trusts(*endpoint):
        return
    address = literal(endpoint[0])
    if address is None:
        return
    reason = refusal(address, allowance.rules())
    if reason is not None:
        raise RefusedURL(f"refused: {reason}", request=request)
