"""Secrets at rest: Fernet tokens under keys from the environment, rotatable with MultiFernet.

``settings.FERNET_KEYS`` lists the keys, newest first: new values are encrypted with the
first, and values written under any listed key can still be read, so a key is rotated by
putting a new one in front and running ``manage.py rotate_secrets``.
"""

from __future__ import annotations

import base64
import hashlib
import os
from functools import cache

from cryptography.exceptions import InvalidTag
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

__all__ = [
    "SecretUnreadable",
    "decrypt",
    "encrypt",
    "fernet",
    "is_sealed",
    "seal",
    "unseal",
]


class SecretUnreadable(Exception):
    """A stored secret was written under a key that is no longer configured."""


@cache
def fernet() -> MultiFernet:
    keys = list(settings.FERNET_KEYS)
    if not keys:
        raise ImproperlyConfigured("FERNET_KEYS is empty: secrets cannot be stored")
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(f"FERNET_KEYS holds an invalid key: {exc}") from None


@receiver(setting_changed)
def _forget_keys(*, setting: str, **kwargs: object) -> None:
    if setting == "FERNET_KEYS":
        fernet.cache_clear()
        _sealing_keys.cache_clear()


def encrypt(value: str) -> str:
    return fernet().encrypt(value.encode("utf-8")).decode("ascii")


def decrypt(token: str) -> str:
    try:
        return fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except InvalidToken as exc:
        raise SecretUnreadable("a stored secret cannot be decrypted with FERNET_KEYS") from exc


# Compact sealing, for values stored once per parked round (requestStates): AES-256-GCM under
# keys derived from FERNET_KEYS (so the same keys, rotated the same way), 31 bytes over the
# plaintext where a Fernet token adds 57 to 72 and then a third for its base64. A sealed value
# is: version (1 byte), key id (2), nonce (12), ciphertext and tag (16); version and key id are
# bound as associated data.
_SEAL_VERSION = 0x01
# Part of the key derivation: it names the module's first home and must never change, or no
# sealed value would read again.
_SEAL_INFO = b"mrtrweb/servers/crypto/seal/v1"
_KID_LEN = 2
_NONCE_LEN = 12
_TAG_LEN = 16


@cache
def _sealing_keys() -> tuple[tuple[bytes, AESGCM], ...]:
    """(key id, cipher) for each key in FERNET_KEYS, newest first."""
    fernet()  # the same checks on the keys
    ring = []
    for key in settings.FERNET_KEYS:
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_SEAL_INFO).derive(
            base64.urlsafe_b64decode(key)
        )
        kid = hashlib.sha256(_SEAL_INFO + derived).digest()[:_KID_LEN]
        ring.append((kid, AESGCM(derived)))
    return tuple(ring)


def seal(value: bytes) -> bytes:
    """``value`` encrypted and authenticated under the newest key, in few bytes."""
    kid, aead = _sealing_keys()[0]
    header = bytes([_SEAL_VERSION]) + kid
    nonce = os.urandom(_NONCE_LEN)
    return header + nonce + aead.encrypt(nonce, value, header)


def is_sealed(token: bytes) -> bool:
    return len(token) >= 1 + _KID_LEN + _NONCE_LEN + _TAG_LEN and token[0] == _SEAL_VERSION


def unseal(token: bytes) -> bytes:
    """The value :func:`seal` sealed, under whichever listed key it was sealed with."""
    if not is_sealed(token):
        raise SecretUnreadable("a stored secret is not a sealed value")
    header, nonce, sealed = token[: 1 + _KID_LEN], token[1 + _KID_LEN : 15], token[15:]
    for kid, aead in _sealing_keys():
        if kid == header[1:]:
            try:
                return aead.decrypt(nonce, sealed, header)
            except InvalidTag:
                continue  # another key with the same two-byte id
    raise SecretUnreadable("a stored secret cannot be decrypted with FERNET_KEYS")
