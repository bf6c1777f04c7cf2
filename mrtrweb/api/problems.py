"""Errors as ``application/problem+json`` (RFC 9457), and reading request bodies safely.

Views raise :class:`ApiError`; the API's exception handlers (service.py) turn it, and
django-ninja's own errors, into the response. A body is read only through :func:`read_json`
(django-ninja's parser), which answers every malformed body (too big, not JSON, unstorable
strings) with a 4xx problem, never a 500; the view's model refuses the wrong shapes and
unknown fields (:func:`validation_problem`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse

from .schemas import Problem, ProblemField, dump

PROBLEM_TYPE = "application/problem+json"
# Far above any real request (a call's arguments, a round's answers) and far below what
# would hurt: the body is read into memory whole.
MAX_BODY_BYTES = 1_000_000
TYPE_BASE = "/api/v1/docs/#problem-"

TITLES = {
    400: "Bad request",
    401: "Authentication required",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Request body too large",
    415: "Unsupported media type",
    422: "Invalid request",
    500: "Internal error",
    502: "The MCP server could not be reached",
    503: "Try again",
}

# Every problem ``type`` the API uses (``/api/v1/docs/#problem-<kind>``), and what it means;
# the reference page lists them under those anchors.
KINDS = {
    "unauthorized": (
        401,
        "No token, a malformed Authorization header, or an unknown or revoked token.",
    ),
    "forbidden": (403, "The token's user lacks the role: only operators manage servers."),
    "not-found": (
        404,
        "Nothing with this id or name that the token's user may see, or no such address.",
    ),
    "method-not-allowed": (
        405,
        "The address does not take this method; Allow lists those it takes.",
    ),
    "already-answered": (
        409,
        "The round is no longer pending: someone answered (or it closed) first.",
    ),
    "unanswerable": (
        409,
        "The round asks for something mrtrweb cannot answer; cancel the call instead.",
    ),
    "not-eligible": (
        403,
        "A quorum round: the policy does not count this person's answers (the approvers are "
        "others, and admins outside them do not vote).",
    ),
    "finished": (409, "The call has already finished."),
    "authorization-required": (
        409,
        "The server wants the caller's own account (OAuth) and they have not connected it: "
        "the detail and the Link header (rel=authorize) say where, in a browser.",
    ),
    "not-cancellable": (
        409,
        "Nothing to cancel now: the call is running or its answers are on their way.",
    ),
    "invalid-json": (400, "The body is not JSON (or uses NaN or Infinity, or nests too deeply)."),
    "too-large": (413, f"The body is larger than {MAX_BODY_BYTES} bytes."),
    "unsupported-media-type": (415, "The body is not application/json."),
    "invalid-body": (422, "The body does not fit: errors points at each field."),
    "invalid-parameter": (
        422,
        "A query parameter or a header (Idempotency-Key) is out of range: errors names it.",
    ),
    "idempotency-key-reused": (
        422,
        "The Idempotency-Key was used, in the last 24 hours, for a request with another "
        "body: a new request needs a new key.",
    ),
    "invalid-answers": (422, "Some answers break the question's schema: errors points at each."),
    "internal": (
        500,
        "A fault of mrtrweb's own, logged for its operators; nothing says the request was "
        "done or not, so check (GET) before sending it again.",
    ),
    "unreachable": (502, "The MCP server's catalog could not be listed."),
    "busy": (
        503,
        "The database stayed busy longer than its lock timeout. Nothing was stored or "
        "started: send the same request again after Retry-After seconds.",
    ),
}


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        detail: str = "",
        *,
        kind: str | None = None,
        title: str | None = None,
        errors: Iterable[ProblemField] = (),
        headers: dict[str, str] | None = None,
    ) -> None:
        self.http_status = status
        self.detail = detail
        self.kind = kind
        self.title = title or TITLES.get(status, "Error")
        self.errors = list(errors)
        self.headers = headers or {}
        super().__init__(f"{status} {self.title}: {detail}")


def problem_response(error: ApiError) -> HttpResponse:
    problem = Problem(
        type=TYPE_BASE + error.kind if error.kind else "about:blank",
        title=error.title,
        status=error.http_status,
        detail=error.detail,
        errors=error.errors,
    )
    response = HttpResponse(
        json.dumps(dump(problem)), status=error.http_status, content_type=PROBLEM_TYPE
    )
    for name, value in error.headers.items():
        response[name] = value
    return response


def not_found(what: str = "Nothing") -> ApiError:
    # The same words whether the thing does not exist or may not be seen.
    return ApiError(404, f"{what} matches the given id, or you may not see it.", kind="not-found")


def pointer(*parts: Any) -> str:
    """An RFC 6901 JSON pointer to ``parts`` (keys are escaped: ``~`` and ``/``)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def validation_problem(errors: Iterable[dict[str, Any]]) -> ApiError:
    """django-ninja's validation errors (``loc`` starts with the source: ``body`` and the
    view's argument, ``query``, ``header``) as one 422 pointing at each culprit."""
    fields = []
    in_body = False
    for error in errors:
        source, *location = error.get("loc") or ("body",)
        message = error.get("msg", "Invalid value.")
        if error.get("type") == "extra_forbidden":
            message = "Unknown field."
        if source == "body":
            in_body = True
            fields.append(ProblemField(detail=message, pointer=pointer(*location[1:])))
        else:
            fields.append(ProblemField(detail=message, parameter=str(location[0])))
    if in_body:
        return ApiError(
            422, "The body does not match the expected shape.", kind="invalid-body", errors=fields
        )
    return ApiError(
        422,
        "A query parameter or a header is not valid.",
        kind="invalid-parameter",
        errors=fields,
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _unstorable(text: str) -> bool:
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


UNSTORABLE = "Null characters (\\u0000) and lone surrogates (\\ud800) are not allowed."
NOT_FINITE = "Numbers must be finite: this one is too large to hold."


def _refused_at(value: Any, *path: Any) -> tuple[str, str] | None:
    """The pointer to the first value (or key) that cannot be kept, and why, if any.

    Legal JSON, but NUL is refused by PostgreSQL's text and jsonb, and a lone surrogate is not
    UTF-8 at all, so neither can be stored (nor sent on to a server); a number such as 1e999
    reads as infinity, which no JSON can carry back out."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _unstorable(item):
                return pointer(*where), UNSTORABLE
        elif isinstance(item, float):
            if not math.isfinite(item):
                return pointer(*where), NOT_FINITE
        elif isinstance(item, dict):
            for key, child in item.items():
                if _unstorable(key):
                    return pointer(*where, key), UNSTORABLE
                stack.append((child, (*where, key)))
        elif isinstance(item, list):
            stack.extend((child, (*where, i)) for i, child in enumerate(item))
    return None


def too_large() -> ApiError:
    return ApiError(413, f"The body may be at most {MAX_BODY_BYTES} bytes.", kind="too-large")


def read_json(request: HttpRequest) -> Any:
    """The request's body as JSON data, or an :class:`ApiError` saying what is wrong with it
    (django-ninja's parser; the view's pydantic model then validates the data)."""
    content_type = request.content_type or ""
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise ApiError(415, "Send the body as application/json.", kind="unsupported-media-type")
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > MAX_BODY_BYTES:
        raise too_large()
    try:
        raw = request.body
    except RequestDataTooBig:
        raise too_large() from None
    if len(raw) > MAX_BODY_BYTES:
        raise too_large()
    try:
        data = json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, f"The body is not valid JSON: {exc}", kind="invalid-json") from None
    refused = _refused_at(data)
    if refused is not None:
        where, detail = refused
        raise ApiError(
            422, detail, kind="invalid-body", errors=[ProblemField(detail=detail, pointer=where)]
        )
    return data
