"""The suite's guard against shown or logged OAuth secrets does catch them."""

from __future__ import annotations

import logging

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from tests.support import secret_guard


def test_a_page_that_shows_an_issued_secret_is_refused() -> None:
    request = RequestFactory().get("/somewhere/")
    guard = secret_guard.SecretGuardMiddleware(lambda r: HttpResponse("token at-sekret-1"))
    with pytest.raises(secret_guard.SecretRendered, match="GET /somewhere/"):
        guard(request)
    clean = secret_guard.SecretGuardMiddleware(lambda r: HttpResponse("nothing to see"))
    assert clean(request).status_code == 200


def test_a_header_that_carries_an_issued_secret_is_refused() -> None:
    response = HttpResponse("")
    response["X-Token"] = "rt-sekret-2"
    guard = secret_guard.SecretGuardMiddleware(lambda r: response)
    with pytest.raises(secret_guard.SecretRendered, match="X-Token"):
        guard(RequestFactory().get("/"))


def test_a_logged_secret_is_recorded() -> None:
    guard = secret_guard.LogGuard()
    logger = logging.getLogger("tests.secret_guard")
    logger.addHandler(guard)
    logger.propagate = False  # the suite-wide guard would fail this very test
    try:
        logger.warning("refreshed with %s", "rt-sekret-3")
        logger.warning("refreshed without a secret")
    finally:
        logger.removeHandler(guard)
        logger.propagate = True
    assert len(guard.hits) == 1 and "tests.secret_guard" in guard.hits[0]
