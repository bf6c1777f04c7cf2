"""Custom HTTP headers of a connection: what an operator may configure, and how it is checked.

Shared by ``manage.py mcp_server add --header`` and the operators' console, so both accept
and refuse exactly the same headers. Header values are where API keys live: no message here
ever repeats a value (nor a whole line, which may be a value pasted without its name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "HEADER_NAME",
    "HEADER_VALUE",
    "RESERVED_HEADERS",
    "HeaderError",
    "parse_header",
    "parse_headers",
]

# RFC 9110 `token`: what a header field name may be made of.
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# Header values: visible ASCII, spaces and tabs; no CR/LF (header injection) and no control bytes.
HEADER_VALUE = re.compile(r"^[\t\x20-\x7e]*$")
# Headers the MCP client itself sets; a custom one would clash with (or forge) them.
RESERVED_HEADERS = frozenset(
    {
        "accept",
        "authorization",
        "connection",
        "content-length",
        "content-type",
        "host",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "mcp-session-id",
        "transfer-encoding",
    }
)
RESERVED_PREFIXES = ("mcp-param-",)


class HeaderError(ValueError):
    """A header the client could not, or must not, send. The message never holds its value."""

    def __init__(self, message: str, *, code: str, name: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.name = name


def parse_header(raw: str, *, token_hint: str = "the bearer token") -> tuple[str, str]:
    """``"Name: value"`` -> ``("Name", "value")``, refusing what the client could not send.

    ``token_hint`` names where the bearer token goes instead of an ``Authorization`` header
    (``--bearer-token`` on the command line, the token field in the console).
    """
    name, sep, value = raw.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not name:
        raise HeaderError('must look like "Name: value"', code="format")
    if not HEADER_NAME.match(name):
        raise HeaderError(f"{name!r} is not a valid header name", code="name", name=name)
    lowered = name.lower()
    if lowered in RESERVED_HEADERS or lowered.startswith(RESERVED_PREFIXES):
        hint = f" (use {token_hint})" if lowered == "authorization" else ""
        raise HeaderError(f"{name} is set by mrtrweb itself{hint}", code="reserved", name=name)
    if not HEADER_VALUE.match(value):
        raise HeaderError(
            f"{name}: the value must be printable ASCII on one line", code="value", name=name
        )
    return name, value


def parse_headers(
    raws: Iterable[str], *, token_hint: str = "the bearer token", line_numbers: bool = False
) -> dict[str, str]:
    """Several ``"Name: value"`` lines -> a dict; blank lines are skipped, a repeat is refused.

    With ``line_numbers`` (a textarea), each message starts with the 1-based line it is about.
    """
    headers: dict[str, str] = {}
    seen: set[str] = set()
    for number, raw in enumerate(raws, start=1):
        if line_numbers and not raw.strip():
            continue
        try:
            name, value = parse_header(raw, token_hint=token_hint)
            if name.lower() in seen:
                raise HeaderError(f"{name} is given twice", code="duplicate", name=name)
        except HeaderError as exc:
            if line_numbers:
                raise HeaderError(f"Line {number}: {exc}", code=exc.code, name=exc.name) from None
            raise
        seen.add(name.lower())
        headers[name] = value
    return headers
