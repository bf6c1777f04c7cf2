import importlib.util
from typing import Any

import pytest


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


# Plugins that other parts of the suite provide; listed only once they exist, so the suite
# runs while they are being written.
pytest_plugins = [
    name
    for name in (
        "tests.peers.fixtures",
        "tests.peers.inprocess",
        "tests.peers.mcp1",
        "tests.peers.ts",
    )
    if _importable(name)
]


# The suites that start app stacks, browsers, the conformance CLI, fuzzers and benchmarks:
# most of the suite's time, in few modules. Their tests are marked ``long_suite`` (`make
# test-fast` leaves them out). `make test` runs modules in parallel (pytest-xdist, ``--dist
# loadscope``), handing them out in this order, so these go first and the many short modules
# fill in around them instead of one long module finishing alone at the end.
LONG_SUITES = (
    "tests/faults/",
    "tests/browser/",
    "tests/conformance/",
    "tests/fuzz/",
    "tests/bench/",
    "tests/scaleout/",
    "tests/api/test_schemathesis.py",
    # A fuzzer: hostile values in every field, query and API parameter of every page.
    "tests/test_bad_input_walk.py",
    # The API served by uvicorn, driven by the example script and by Chromium.
    "tests/api/test_live.py",
    # Processes racing on one PostgreSQL database (five approvers; two token refreshers).
    "tests/calls/engine/test_quorum_race.py",
    "tests/authorizations/test_refresh_race.py",
)


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return next(
        (i for i, suite in enumerate(LONG_SUITES) if path.startswith(suite)), len(LONG_SUITES)
    )


def pytest_itemcollected(item: pytest.Item) -> None:
    # Marked as it is collected: `-m` deselects before any reordering hook runs.
    if _rank(item) < len(LONG_SUITES):
        item.add_marker(pytest.mark.long_suite)


@pytest.hookimpl(trylast=True)  # after pytest-django's own ordering, which it keeps otherwise
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: each module's tests keep their order


@pytest.fixture(autouse=True)
def _test_settings(settings):
    # The manifest storage and WhiteNoise's file index need `collectstatic` to have run;
    # tests link to and serve the source files instead, as DEBUG does.
    settings.WHITENOISE_USE_FINDERS = True
    settings.WHITENOISE_AUTOREFRESH = True
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    # Links as a plain `make run` serves them, whatever HOST and PORT the tests run under
    # (`PORT=8080 make test` passes them on; mrtrweb/env.py, base_url).
    settings.MRTRWEB_BASE_URL = "http://127.0.0.1:8000"
    # The production hasher is slow on purpose; tests create users by the dozen.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # In-process tests drive delivery through the task queue, step by step; the delivery
    # threads an answer's own process uses are tested on their own (tests/calls/test_handoff.py)
    # and by every test that runs the app as a server.
    settings.MRTRWEB_DELIVER_ON_ANSWER = False


@pytest.fixture(autouse=True)
def _site_language():
    """Each test starts in the site's language. LocaleMiddleware activates a request's language
    on the thread that serves it and, like Django, leaves it there; under ASGI each request
    has a context of its own, but the test client serves on the test's thread, so a page
    served in German would leave later tests' words in German."""
    from django.conf import settings as django_settings
    from django.utils import translation

    translation.activate(django_settings.LANGUAGE_CODE)
    yield
    translation.activate(django_settings.LANGUAGE_CODE)


@pytest.fixture(autouse=True)
def _shared_thread_closes_its_connections():
    """No test leaves a database connection open in asgiref's shared thread. Outside a
    request, every thread-sensitive ``sync_to_async`` of every test runs in that one thread
    (``SyncToAsync.single_thread_executor``), which outlives the test: a connection left open
    there was found by a later test with no database (channels' ``database_sync_to_async``
    asks it whether it is still usable), which failed or passed by the order tests ran in."""
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=30)


@pytest.fixture(autouse=True)
def _secrets_never_shown(settings):
    """No OAuth secret a test server issued is shown or logged (tests/support/secret_guard.py)."""
    from tests.support import secret_guard

    guard = secret_guard.install(settings)
    yield
    secret_guard.uninstall(guard)
    assert not guard.hits, "an issued secret was logged:\n" + "\n".join(guard.hits)


@pytest.fixture
def user(db: Any) -> Any:
    """Ada, a person with no role (tests/support/factories.py)."""
    from tests.support.factories import make_user

    return make_user("ada")


@pytest.fixture
def inline_tasks(settings):
    """Deliver answered rounds inline, when the answering transaction commits.

    Tests that post answers use it with ``django_db(transaction=True)``, so the server has
    received the retry by the time the post returns.
    """
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}


@pytest.fixture(autouse=True)
def _verified_force_login(monkeypatch):
    """``force_login`` gives the session a person has after their code when they must pass
    a second factor or set one up (tests/support/second_factor.py: admins, operators, staff).
    ``force_login(user, verified=False)`` gives the bare session a password alone gives."""
    from django.test import Client

    from tests.support.second_factor import verify_client

    password_only = Client.force_login

    def force_login(self, user, backend=None, verified=True):
        password_only(self, user, backend)
        if verified:
            verify_client(self, user)

    monkeypatch.setattr(Client, "force_login", force_login)
