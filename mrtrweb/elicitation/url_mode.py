"""Describing a URL-mode elicitation's URL for the consent screen. Nothing here fetches.

The spec wants the full URL shown before consent with the target host made clear, and
ambiguous or suspicious URLs (Punycode, for one) called out. ``describe_url`` only parses the
string. Where Python's parser and a browser's (WHATWG) could disagree about the host,
for example a backslash, a percent-encoded host or no ``//``, the URL is marked not
openable, so the host we show is the host a click would reach.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from django.utils.translation import gettext as _

OPENABLE_SCHEMES = frozenset({"https", "http"})

# Codes of warnings that make a URL unsafe to offer as a link at all.
BLOCKING = frozenset(
    {
        "unparseable",
        "unsupported_scheme",
        "no_host",
        "control_characters",
        "invisible_characters",
        "backslash",
        "percent_encoded_host",
    }
)

# WHATWG reads a host whose last label is a number (``2130706433``, ``0x7f.1``) as IPv4.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*")


@dataclass(frozen=True)
class UrlWarning:
    code: str
    message: str

    @property
    def blocking(self) -> bool:
        return self.code in BLOCKING


@dataclass(frozen=True)
class UrlInfo:
    full_url: str  # exactly as the server sent it; show all of it
    scheme: str  # lower case, "" if none
    host: str  # lower-case host as a browser would contact it (IPv6 in brackets), or ""
    warnings: tuple[UrlWarning, ...]
    host_unicode: str | None = None  # how the host may look once decoded, when it differs
    port: int | None = None

    @property
    def openable(self) -> bool:
        """True when offering a link is safe: http(s), a host, and nothing that blocks."""
        return not any(warning.blocking for warning in self.warnings)

    @property
    def codes(self) -> frozenset[str]:
        return frozenset(warning.code for warning in self.warnings)


def describe_url(url: str) -> UrlInfo:
    """Parse ``url`` for display and list what a person should be warned about."""
    warnings: list[UrlWarning] = []

    def warn(code: str, message: str) -> None:
        warnings.append(UrlWarning(code, message))

    if any(unicodedata.category(ch) == "Cc" or ch.isspace() for ch in url):
        warn("control_characters", _("The address contains spaces or control characters."))
    if any(unicodedata.category(ch) == "Cf" for ch in url):
        warn(
            "invisible_characters",
            _("The address contains invisible formatting characters that can disguise it."),
        )
    if "\\" in url:
        warn("backslash", _("The address contains a backslash, which browsers read as '/'."))

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        warn("unparseable", _("The address cannot be parsed."))
        return UrlInfo(full_url=url, scheme="", host="", warnings=tuple(warnings))

    scheme = parts.scheme.lower()
    if scheme not in OPENABLE_SCHEMES:
        warn(
            "unsupported_scheme",
            _("Only web addresses (https) can be opened; this one uses the %(scheme)s scheme.")
            % {"scheme": scheme}
            if scheme
            else _("Only web addresses (https) can be opened; this one has no scheme."),
        )
    elif scheme == "http":
        warn("plain_http", _("The address uses plain http: the connection is not encrypted."))

    raw_host = parts.hostname or ""
    if not raw_host:
        warn("no_host", _("The address names no host."))
        return UrlInfo(full_url=url, scheme=scheme, host="", warnings=tuple(warnings), port=port)
    if parts.username is not None or parts.password is not None:
        warn(
            "userinfo",
            _("The address has text before an '@', which hides its real host: %(host)s.")
            % {"host": raw_host},
        )
    if "%" in raw_host:
        warn("percent_encoded_host", _("The host is percent-encoded, which hides its real name."))

    host, host_unicode = _host_forms(parts, raw_host, warn)
    return UrlInfo(
        full_url=url,
        scheme=scheme,
        host=host,
        warnings=tuple(warnings),
        host_unicode=host_unicode,
        port=port,
    )


def _host_forms(
    parts: SplitResult, raw_host: str, warn: Callable[[str, str], None]
) -> tuple[str, str | None]:
    if parts.netloc.rpartition("@")[2].startswith("["):
        warn(
            "ip_literal",
            _("The address is a raw IP address (%(host)s), not a name.") % {"host": raw_host},
        )
        _warn_if_local(raw_host, warn)
        return f"[{raw_host}]", None
    if _is_ip(raw_host):
        warn(
            "ip_literal",
            _("The address is a raw IP address (%(host)s), not a name.") % {"host": raw_host},
        )
        _warn_if_local(raw_host, warn)
        return raw_host, None
    _warn_if_local(raw_host, warn)

    host_unicode = None
    if not raw_host.isascii():
        ascii_host = _to_ascii(raw_host)
        warn(
            "non_ascii_host",
            _(
                "The host contains non-ASCII characters, which can imitate other names (it is "
                "really %(host)s)."
            )
            % {"host": ascii_host}
            if ascii_host
            else _("The host contains non-ASCII characters, which can imitate other names."),
        )
        host_unicode = raw_host
        host = ascii_host or raw_host
    else:
        host = raw_host
    labels = host.split(".")
    if raw_host.isascii() and any(label.lower().startswith("xn--") for label in labels):
        decoded = _to_unicode(host)
        warn(
            "punycode",
            _(
                "The host is an encoded international name that displays as %(shown)s; check "
                "it is the site you expect."
            )
            % {"shown": decoded}
            if decoded and decoded != host
            else _("The host is an encoded international name; check it is the site you expect."),
        )
        host_unicode = host_unicode or decoded
    if host_unicode == host:
        host_unicode = None
    return host, host_unicode


def _warn_if_local(host: str, warn: Callable[[str, str], None]) -> None:
    """Addresses that lead to the person's own machine or network, not to the server."""
    name = host.rstrip(".")
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        local = name == "localhost" or name.endswith((".localhost", ".local"))
    else:
        local = address.is_loopback or address.is_private or address.is_link_local
    if local:
        warn(
            "local_address",
            _("The address %(host)s points into your own computer or network.") % {"host": host},
        )


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return True
    labels = host.split(".")
    if labels and labels[-1] == "" and len(labels) > 1:
        labels = labels[:-1]
    return bool(labels) and _NUMERIC_LABEL.fullmatch(labels[-1]) is not None


def _to_ascii(host: str) -> str | None:
    try:
        return host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None


def _to_unicode(host: str) -> str | None:
    try:
        return host.encode("ascii").decode("idna")
    except UnicodeError:
        return None
