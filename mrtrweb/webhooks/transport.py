"""The HTTP client webhooks are sent with: short timeouts, no redirects, no proxies from the
environment, and a network backend that only connects to addresses the rules allow
(:mod:`mrtrweb.netguard`, with the rules of :func:`.destinations.rules`)."""

from __future__ import annotations

import httpx

from mrtrweb import netguard

from . import destinations

__all__ = ["client", "was_refused"]

was_refused = netguard.was_refused


def client(timeout: float) -> httpx.Client:
    backend = netguard.GuardedBackend(destinations.rules(), label="webhook destination refused")
    return httpx.Client(
        transport=netguard.sync_transport(backend),
        timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
        follow_redirects=False,
        trust_env=False,
        headers={"User-Agent": "mrtrweb-webhooks/1"},
    )
