"""Secrets at rest: Fernet tokens under keys from the environment, rotatable with MultiFernet.

``settings.FERNET_KEYS`` lists the keys, newest first: new values are encrypted with the
first, and values written under any listed key can still be read, so a key is rotated by
putting a new one in front and running ``manage.py rotate_secrets``.
"""

from __future__ import annotations

from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

__all__ = ["SecretUnreadable", "decrypt", "encrypt", "fernet"]


class SecretUnreadable(Exception):
    """A stored secret was written under a key that is no longer configured."""


@cache
def fernet() -> MultiFernet:
    keys = list(getattr(settings, "FERNET_KEYS", []))
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


def encrypt(value: str) -> str:
    return fernet().encrypt(value.encode("utf-8")).decode("ascii")


def decrypt(token: str) -> str:
    try:
        return fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except InvalidToken as exc:
        raise SecretUnreadable("a stored secret cannot be decrypted with FERNET_KEYS") from exc


def rotate(token: str) -> str:
    """Re-encrypt ``token`` under the newest key."""
    return fernet().rotate(token.encode("ascii")).decode("ascii")
