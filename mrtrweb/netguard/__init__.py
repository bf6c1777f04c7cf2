"""Where mrtrweb may connect when someone else chose the address: the guard against
server-side request forgery, shared by webhooks (a URL an API token holder chose) and OAuth
(URLs an MCP server and its authorization server name). No Django: the callers pass their
rules in.

- :mod:`.addresses`: which IP addresses a set of :class:`Rules` allows;
- :mod:`.backends`: httpcore network backends that resolve a name themselves, vet every
  address and connect to a vetted one (no window for DNS rebinding);
- :mod:`.transports`: the httpx transports whose connections go through such a backend;
- :mod:`.allowance`: what one destination trusts beyond the rules (an origin, host names,
  networks), and the check of a URL before anything is sent.
"""

from __future__ import annotations

from .addresses import IPAddress, Rules, literal, refusal, resolve
from .allowance import Allowance, InvalidAllowance, parse_allowance, vet_url
from .backends import (
    AsyncGuardedBackend,
    GuardedBackend,
    Refused,
    RefusedURL,
    was_refused,
)
from .transports import AsyncGuardedTransport, GuardedTransport, async_transport, sync_transport

__all__ = [
    "Allowance",
    "AsyncGuardedBackend",
    "AsyncGuardedTransport",
    "GuardedBackend",
    "GuardedTransport",
    "IPAddress",
    "InvalidAllowance",
    "Refused",
    "RefusedURL",
    "Rules",
    "async_transport",
    "literal",
    "parse_allowance",
    "refusal",
    "resolve",
    "sync_transport",
    "vet_url",
    "was_refused",
]
