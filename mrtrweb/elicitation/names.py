"""Safe, reversible HTML names for server-chosen strings.

Input request keys and property names are arbitrary server strings (any Unicode, spaces,
quotes, ``__main__:ask_name``, even ``""``). They never appear in ``name``/``id`` attributes
as they are: a request key becomes a fixed-length hash prefix, and a property name becomes
``f`` + base64url of its UTF-8 bytes, which decodes back without the schema at hand.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable

# Lone surrogates are legal in JSON strings (``"\ud800"``) and json.loads keeps them;
# surrogatepass lets them round-trip instead of crashing the encoder.
_ENCODING = "utf-8"
_ERRORS = "surrogatepass"

FIELD_MARK = "f"
PREFIX_MARK = "q"
PREFIX_HASH_CHARS = 20  # 80 bits of SHA-256: collisions between keys of one round are moot


def prefix_for_key(key: str) -> str:
    """The Django form prefix for the input request ``key``: ``q`` + 20 hex digits.

    A hash rather than an encoding of the key, so the prefix has a fixed length however long
    the key is; the view always knows the round's keys and can map back with
    ``key_for_prefix``.
    """
    digest = hashlib.sha256(key.encode(_ENCODING, _ERRORS)).hexdigest()
    return PREFIX_MARK + digest[:PREFIX_HASH_CHARS]


def key_for_prefix(prefix: str, keys: Iterable[str]) -> str | None:
    """The key among ``keys`` whose prefix is ``prefix``, or None."""
    for key in keys:
        if prefix_for_key(key) == prefix:
            return key
    return None


def field_name_for(prop: str) -> str:
    """The form field name for property ``prop``: ``f`` + unpadded base64url of its bytes.

    The alphabet ``[A-Za-z0-9_-]`` is safe in ``name`` and ``id`` attributes and CSS
    selectors need no escaping beyond the leading ``id_``. The ``f`` keeps ``""`` from
    becoming an empty field name.
    """
    raw = prop.encode(_ENCODING, _ERRORS)
    return FIELD_MARK + base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def prop_for_field_name(name: str) -> str:
    """Inverse of ``field_name_for``; raises ValueError for names it could not have made."""
    if not name.startswith(FIELD_MARK):
        raise ValueError(f"not an elicitation field name: {name!r}")
    body = name[len(FIELD_MARK) :]
    if not body.isascii() or "=" in body or len(body) % 4 == 1:
        raise ValueError(f"not an elicitation field name: {name!r}")
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        prop = raw.decode(_ENCODING, _ERRORS)
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"not an elicitation field name: {name!r}") from exc
    # base64 decoding ignores some non-canonical trailing bits; only canonical names count.
    if field_name_for(prop) != name:
        raise ValueError(f"not an elicitation field name: {name!r}")
    return prop
