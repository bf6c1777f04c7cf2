"""The people and connections tests make, in one place (fixtures in tests/conftest.py).

- :func:`make_user`: a person with the password ``pw-<username>-123`` and the named groups
  (roles); whether they must pass a second factor is decided by those roles, and
  ``force_login`` gives them a passed one (tests/support/second_factor.py).
- :func:`make_connection`: a connection to a running peer (its ``url``), or to an address
  nothing answers on when the test never reaches a server; as if an operator had tested it
  (``tested_at``), so the start pages offer it to end users (pass ``tested_at=None`` for one
  never tested).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from mrtrweb.servers.models import Connection


def make_user(username: str = "ada", *groups: str, **fields: Any) -> Any:
    """A person in ``groups`` (names, e.g. ``OPERATORS``); ``fields`` go to ``create_user``."""
    fields.setdefault("password", f"pw-{username}-123")
    user = get_user_model().objects.create_user(username, **fields)
    for name in groups:
        user.groups.add(Group.objects.get(name=name))
    return user


def make_connection(peer: Any = None, name: str = "peer", **fields: Any) -> Connection:
    """The connection ``name`` (titled "<name> server") to ``peer``, or to a closed port."""
    fields.setdefault("url", peer.url if peer is not None else f"http://127.0.0.1:9/{name}/mcp")
    fields.setdefault("title", f"{name} server")
    fields.setdefault("tested_at", timezone.now())
    return Connection.objects.create(name=name, **fields)


def wide(text: str) -> str:
    """``text`` in fullwidth letters ("bob" -> U+FF42 U+FF4F U+FF42), which NFKC makes
    plain again: a username that reads as another one."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)
