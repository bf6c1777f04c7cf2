"""Model fields whose values are encrypted at rest."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import TYPE_CHECKING, Any

from django.db import models

from .crypto import decrypt, encrypt, seal, unseal

if TYPE_CHECKING:
    # What the fields below give and take, for the type checker: any JSON value; text (or
    # None). django-stubs' fields are generic in both; Django's classes are not at runtime.
    JSONTextField = models.Field[Any, Any]
    CompactTextField = models.BinaryField[str | None, str | None]
else:
    JSONTextField = models.TextField
    CompactTextField = models.BinaryField


class EncryptedTextField(models.TextField):
    """A text value stored as a Fernet token. ``None`` stays ``NULL`` (and "" stays "")."""

    description = "Text encrypted at rest"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        if value is None or value == "":
            return value
        return decrypt(value)

    def get_prep_value(self, value: Any) -> str | None:
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt(value)


# How an empty JSON object is stored: it holds no secret, so it is kept as this text rather
# than as a ~100-byte Fernet token (a call on a connection without credentials stores one).
_EMPTY_OBJECT = "{}"


class EncryptedJSONField(JSONTextField):
    """A JSON value stored as one Fernet token (headers may carry API keys).

    ``None`` is ``NULL``; an empty object is the text ``{}`` (nothing to hide); anything else
    is a token.
    """

    description = "JSON encrypted at rest"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        if value is None:
            return None
        if value == _EMPTY_OBJECT:
            return {}
        return json.loads(decrypt(value))

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value

    def get_prep_value(self, value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, dict) and not value:
            return _EMPTY_OBJECT
        return encrypt(json.dumps(value, sort_keys=True))


# The plaintext of a compacted value starts with this byte, which no UTF-8 text starts with.
_COMPACT = b"\xff"
# A dotted prefix (at most 255 bytes) then unpadded URL-safe base64: the shape of most sealed
# tokens (requestStates among them), whose base64 is stored decoded, a quarter smaller.
_TOKEN_SHAPE = re.compile(r"((?:[A-Za-z0-9_-]{0,32}\.){0,4})([A-Za-z0-9_-]+)")


def _compact(text: str) -> bytes:
    """``text`` as bytes to encrypt: its UTF-8, or (marker, prefix length, prefix, decoded
    base64) when it is a prefixed base64url token that decodes and re-encodes to the same
    text (byte for byte; anything else is kept as it is)."""
    shape = _TOKEN_SHAPE.fullmatch(text)
    if shape is not None:
        prefix, payload = shape.groups()
        try:
            raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        except (binascii.Error, ValueError):
            raw = None
        if (
            raw is not None
            and len(raw) + len(prefix) + 2 < len(text)
            and base64.urlsafe_b64encode(raw).rstrip(b"=").decode() == payload
        ):
            return _COMPACT + bytes([len(prefix)]) + prefix.encode("ascii") + raw
    return text.encode("utf-8")


def _expand(plain: bytes) -> str:
    if not plain.startswith(_COMPACT):
        return plain.decode("utf-8")
    size = plain[1]
    prefix, raw = plain[2 : 2 + size].decode("ascii"), plain[2 + size :]
    return prefix + base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


class EncryptedCompactTextField(CompactTextField):
    """A text value encrypted at rest, in as few bytes as it takes: sealed with
    :func:`~.crypto.seal` (AES-GCM under the FERNET_KEYS, 31 bytes over the plaintext), the
    text's base64 decoded first when it is a base64url token.
    ``None`` stays ``NULL`` and "" stays empty."""

    description = "Text encrypted at rest, compactly"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> str | None:
        if value is None:
            return None
        raw = bytes(value)
        return _expand(unseal(raw)) if raw else ""

    def to_python(self, value: Any) -> Any:
        return value

    def get_prep_value(self, value: Any) -> bytes | None:
        if value is None:
            return None
        if value == "":
            return b""
        return seal(_compact(str(value)))

    def value_to_string(self, obj: Any) -> str:
        value = self.value_from_object(obj)
        return "" if value is None else str(value)
