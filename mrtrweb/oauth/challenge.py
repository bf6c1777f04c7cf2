"""The ``WWW-Authenticate`` challenge of a 401 or 403 (RFC 6750 section 3, RFC 9728 section 5.1)."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Challenge", "auth_params", "challenges"]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def challenges(header: str) -> dict[str, dict[str, str]]:
    """Every challenge of a ``WWW-Authenticate`` value: scheme (lower case) -> parameters.

    A value may hold several challenges (``DPoP ..., Bearer ...``), and a quoted value may
    hold commas, so it is scanned, not split. The first value of a repeated name counts.
    """
    found: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    pos, size = 0, len(header)
    while pos < size:
        if header[pos] in " \t,":
            pos += 1
            continue
        token = _TOKEN.match(header, pos)
        if token is None:
            pos += 1  # a stray character: skip it rather than give up on the rest
            continue
        pos = token.end()
        after = pos
        while after < size and header[after] in " \t":
            after += 1
        if after < size and header[after] == "=" and current is not None:
            pos = after + 1
            while pos < size and header[pos] in " \t":
                pos += 1
            quoted = _QUOTED.match(header, pos)
            if quoted is not None:
                value = re.sub(r"\\(.)", r"\1", quoted.group(1))
                pos = quoted.end()
            else:
                plain = re.compile(r"[^\s,]*").match(header, pos)
                value = plain.group(0) if plain else ""
                pos = plain.end() if plain else pos
            current.setdefault(token.group(0).lower(), value)
        else:
            current = found.setdefault(token.group(0).lower(), {})
    return found


def auth_params(header: str, scheme: str = "Bearer") -> dict[str, str]:
    """The parameters of the ``scheme`` challenge in ``header`` ({} when there is none)."""
    return challenges(header).get(scheme.lower(), {})


@dataclass(frozen=True)
class Challenge:
    """What a refusal asks for: ``error`` (``invalid_token``, ``insufficient_scope``...), the
    scopes it names, and where the protected resource metadata is."""

    status: int
    error: str | None = None
    scope: tuple[str, ...] = ()
    resource_metadata: str | None = None

    @classmethod
    def parse(cls, http_status: int, www_authenticate: str | None) -> Challenge:
        params = auth_params(www_authenticate) if www_authenticate else {}
        return cls(
            status=http_status,
            error=params.get("error") or None,
            scope=tuple(params.get("scope", "").split()),
            resource_metadata=params.get("resource_metadata") or None,
        )

    @property
    def insufficient_scope(self) -> bool:
        return self.status == 403 and self.error == "insufficient_scope"
