"""HTTP responses every app's views share, and how they read a number a request carries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponseRedirect, QueryDict

# The largest number a bigint column holds: a larger id names nothing (and some databases
# refuse to compare with it rather than find nothing).
LARGEST_ID = 2**63 - 1


class SignedInRequest(HttpRequest):
    """The request a view behind ``login_required`` (or a role check) receives: for the type
    checker its user is a person, never ``AnonymousUser``. Nothing creates one; it is a type."""

    user: User

    if TYPE_CHECKING:

        async def auser(self) -> User: ...


class SeeOther(HttpResponseRedirect):
    """303 See Other: after a POST the browser GETs the page it leads to, and never repeats
    the POST (a 302 may be repeated with the same method by some clients)."""

    status_code = 303


def whole_number(raw: object) -> int | None:
    """``raw`` as a whole number of at most ``LARGEST_ID``, written in ASCII digits only; else
    None.

    ``str.isdigit`` holds for "²" and for other scripts' digits, which ``int`` refuses ("²")
    or reads ("٣" is 3): neither is what our pages send, so neither names an id or a page.
    """
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    if not text or len(text) > len(str(LARGEST_ID)) or not (text.isascii() and text.isdigit()):
        return None
    number = int(text)
    return number if number <= LARGEST_ID else None


def text_param(source: QueryDict, name: str) -> str | None:
    """The text a request carries under ``name`` ("" when absent), or None when it holds a NUL:
    no page of ours sends one, and PostgreSQL can neither store nor compare it, so such a
    value names nothing and matches nothing."""
    value = source.get(name, "")
    return None if "\x00" in value else value
