"""The django-ninja API object: routes register on it (views.py), and it answers every error as
``application/problem+json`` (RFC 9457) in our shape.

django-ninja parses the path, query, header and body parameters from the views' signatures
and builds the OpenAPI document from the same signatures and models (openapi.py adds what a
signature cannot say). What it does not do our way is set right here: bodies are read by
:class:`JsonBody` (415, 413, 400, unstorable strings); its validation errors, its refusals and
our :class:`ApiError` all become problems; responses are serialized as pydantic's JSON mode
writes them (full-precision times ending in ``Z``) and typed plain ``application/json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from inspect import iscoroutinefunction
from typing import Any

import pydantic_core
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.http.response import HttpResponseBase
from django.urls import URLPattern
from django.utils.log import log_response
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.renderers import BaseRenderer

from .auth import LAST_USED_EVERY, BearerToken
from .models import ApiToken
from .problems import (
    ApiError,
    not_found,
    problem_response,
    read_json,
    too_large,
    validation_problem,
)
from .schemas import Problem

# A path id that is no id at all (``abc``, ``-1``, 2**64) is simply absent, as on the pages.
NOT_FOUND_WORDS = {"calls": "No call", "rounds": "No round", "servers": "No server"}


class JsonBody(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        return read_json(request)


class Json(BaseRenderer):
    media_type = "application/json"

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> bytes:
        return json.dumps(data, default=pydantic_core.to_jsonable_python).encode()


class Api(NinjaAPI):
    def get_content_type(self) -> str:
        return "application/json"


api = Api(
    title="mrtrweb API",
    version="1",
    description=(
        "Start MCP calls and wait for people's answers. Authenticate with a personal API "
        "token: `Authorization: Bearer mrtr_...` (tokens are made on the “API tokens” page). "
        "Errors are `application/problem+json`. Request bodies refuse unknown fields. A "
        f"token's `lastUsedAt` is updated at most every {int(LAST_USED_EVERY.total_seconds())} "
        "seconds."
    ),
    servers=[{"url": "/api/v1"}],
    urls_namespace="api",
    auth=BearerToken(),
    parser=JsonBody(),
    renderer=Json(),
    # The document and its reference page are served by reference.py, with our touches.
    openapi_url=None,
    docs_url=None,
)


# Operators-only operations: the role is checked with the token, before the body is read.
OPERATOR = BearerToken(operators=True)


def problems(*codes: int) -> dict[Any, Any]:
    """The problems an operation may answer with, besides 401 (any request without a token)."""
    return {frozenset((401, *codes)): Problem}


def says(status: int, description: str) -> dict[str, Any]:
    """A response's words in the document (a signature cannot say them)."""
    return {"responses": {status: {"description": description}}}


def token_of(request: HttpRequest) -> ApiToken:
    """The request's token, as its operation's auth found it."""
    # django-ninja sets ``auth`` on the request; HttpRequest's type does not name it.
    return request.auth  # type: ignore[attr-defined]


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return problem_response(exc)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # django-ninja turns any failure of the body parser into a 400; ours says which.
    if isinstance(exc.__cause__, ApiError):
        return problem_response(exc.__cause__)
    return problem_response(ApiError(exc.status_code, str(exc)))  # pragma: no cover


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return problem_response(too_large())


@api.exception_handler(RecursionError)
def _too_deep(request: HttpRequest, exc: RecursionError) -> HttpResponse:
    return problem_response(ApiError(400, "The body is nested too deeply.", kind="invalid-json"))


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    # Only reached when an auth callback returns nothing; ours raise their own 401s.
    return problem_response(ApiError(401, "Authentication required.", kind="unauthorized"))


@api.exception_handler(Exception)
def _failed(request: HttpRequest, exc: Exception) -> HttpResponse:
    # A bug of ours is still the API's answer: a problem, never the site's HTML 500 page.
    response = problem_response(
        ApiError(
            500,
            "Something went wrong on our side; it was logged. Try again later.",
            kind="internal",
        )
    )
    log_response(
        "Internal Server Error: %s", request.path, response=response, request=request, exception=exc
    )
    return response


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    if any(error["loc"][0] == "path" for error in exc.errors):
        section = request.path.removeprefix("/api/v1/").split("/", 1)[0]
        return problem_response(not_found(NOT_FOUND_WORDS.get(section, "Nothing")))
    return problem_response(validation_problem(exc.errors))


def url_patterns() -> list[URLPattern]:
    """The operations' URL patterns (views.py must be imported first); a method an address
    does not take is a 405 problem with ``Allow``, not django-ninja's plain text."""
    patterns = []
    for pattern in api.urls[0]:
        if isinstance(pattern, URLPattern) and pattern.name != "api-root":
            pattern.callback = _problem_405(pattern.callback)
            patterns.append(pattern)
    return patterns


def _as_problem(response: HttpResponseBase) -> HttpResponseBase:
    if not isinstance(response, HttpResponseNotAllowed):
        return response
    allowed = ", ".join(sorted(m.strip() for m in response["Allow"].split(",")))
    return problem_response(
        ApiError(405, f"Use {allowed}.", kind="method-not-allowed", headers={"Allow": allowed})
    )


def _problem_405(view: Callable[..., Any]) -> Callable[..., Any]:
    if iscoroutinefunction(view):

        async def async_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            return _as_problem(await view(request, *args, **kwargs))

        async_view.csrf_exempt = True  # type: ignore[attr-defined]
        return async_view

    def sync_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        return _as_problem(view(request, *args, **kwargs))

    sync_view.csrf_exempt = True  # type: ignore[attr-defined]
    return sync_view
