"""Blanking a connection's secrets out of text a server sent (errors, test reports): the console,
the API and the stored reason of a failed test show it (probe.py, catalog.py)."""

from __future__ import annotations

from .models import Connection

__all__ = ["redact"]


def redact(text: str, connection: Connection) -> str:
    """``text`` with the connection's secrets blanked out, in case a server echoes them back.

    Values shorter than 4 characters are left alone: blanking every "1" would garble the text
    and such values protect nothing.
    """
    secrets = [
        connection.bearer_token,
        connection.oauth_client_secret,
        *(connection.headers or {}).values(),
    ]
    for secret in sorted((s for s in secrets if s and len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, "[secret]")
    return text
