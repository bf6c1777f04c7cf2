"""Checks for the four string formats of the elicitation vocabulary, on the values we send.

These judge the wire value (what goes into ``ElicitResult.content``), not what a person typed:
the form fields parse typed input leniently and always produce a value that passes here.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re

from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator

_DATE = re.compile(r"(?P<y>[0-9]{4})-(?P<m>[0-9]{2})-(?P<d>[0-9]{2})")

# RFC 3339 §5.6 ``date-time``; ``T``/``Z`` may be lower case (§5.6 NOTE). The space variant
# the same note allows is not accepted, as JSON Schema's ``date-time`` follows the ABNF.
_DATE_TIME = re.compile(
    r"(?P<y>[0-9]{4})-(?P<m>[0-9]{2})-(?P<d>[0-9]{2})[Tt]"
    r"(?P<H>[0-9]{2}):(?P<M>[0-9]{2}):(?P<S>[0-9]{2})(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-](?P<oh>[0-9]{2}):(?P<om>[0-9]{2}))"
)

# RFC 3986 §3 ``URI`` (absolute, fragment allowed), spelled out so that a scheme-less
# ``example.com`` or a ``https://a b`` is refused exactly as a strict server would.
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_USERINFO = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*"
_IP_LITERAL = rf"\[(?P<ip6>[0-9A-Fa-f:.]+|[vV][0-9A-Fa-f]+\.[{_UNRESERVED}{_SUB_DELIMS}:]+)\]"
_REG_NAME = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*"
_AUTHORITY = rf"(?:{_USERINFO}@)?(?:{_IP_LITERAL}|{_REG_NAME})(?::[0-9]*)?"
_PATH_ABEMPTY = rf"(?:/{_PCHAR}*)*"
_PATH_ABSOLUTE = rf"/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?"
_PATH_ROOTLESS = rf"{_PCHAR}+(?:/{_PCHAR}*)*"
_QUERY = rf"(?:{_PCHAR}|[/?])*"
_URI = re.compile(
    rf"[A-Za-z][A-Za-z0-9+\-.]*:"
    rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|{_PATH_ABSOLUTE}|{_PATH_ROOTLESS}|)"
    rf"(?:\?{_QUERY})?(?:#{_QUERY})?"
)

_email_validator = EmailValidator()


def is_date(value: str) -> bool:
    """RFC 3339 ``full-date``: ``YYYY-MM-DD`` naming a real calendar day."""
    match = _DATE.fullmatch(value)
    if not match:
        return False
    try:
        dt.date(int(match["y"]), int(match["m"]), int(match["d"]))
    except ValueError:
        return False
    return True


def is_date_time(value: str) -> bool:
    """RFC 3339 ``date-time`` with a mandatory offset (``Z`` or ``±hh:mm``)."""
    match = _DATE_TIME.fullmatch(value)
    if not match:
        return False
    try:
        dt.datetime(
            int(match["y"]),
            int(match["m"]),
            int(match["d"]),
            int(match["H"]),
            int(match["M"]),
            int(match["S"]),
        )
    except ValueError:
        return False
    return match["oh"] is None or (int(match["oh"]) <= 23 and int(match["om"]) <= 59)


def is_uri(value: str) -> bool:
    """RFC 3986 absolute URI (any scheme); IRIs with raw non-ASCII characters are not URIs."""
    match = _URI.fullmatch(value)
    if not match:
        return False
    ip6 = match["ip6"]
    if ip6 is not None and ip6[:1] not in ("v", "V"):
        try:
            ipaddress.IPv6Address(ip6)
        except ValueError:
            return False
    return True


def is_email(value: str) -> bool:
    """An address Django's ``EmailValidator`` accepts (``local@domain.tld``, ASCII local part)."""
    try:
        _email_validator(value)
    except ValidationError:
        return False
    return True


FORMAT_CHECKS = {"date": is_date, "date-time": is_date_time, "uri": is_uri, "email": is_email}
