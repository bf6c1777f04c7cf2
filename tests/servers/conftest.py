"""People and clients for the operators' console tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from mrtrweb.people.roles import ADMINS, END_USERS, OPERATORS, ensure_roles
from tests.peers.fixtures import Peer, running_peer

PASSWORD = "pw-console-123"


def person(username: str, *groups: str, **fields: Any) -> Any:
    ensure_roles()
    user = get_user_model().objects.create_user(username, password=PASSWORD, **fields)
    for name in groups:
        user.groups.add(Group.objects.get(name=name))
    return user


def signed_in(user: Any, **client_kwargs: Any) -> Client:
    client = Client(**client_kwargs)
    client.force_login(user)
    return client


@pytest.fixture
def operator() -> Any:
    return person("olga", OPERATORS)


@pytest.fixture
def end_user() -> Any:
    return person("eve", END_USERS)


@pytest.fixture
def admin_user() -> Any:
    return person("adam", ADMINS)


@pytest.fixture
def web(operator: Any) -> Client:
    return signed_in(operator)


@pytest.fixture(scope="session")
def html_peer() -> Iterator[Peer]:
    with running_peer("tests.servers.html_peer") as peer:
        yield peer
