"""The OpenAPI 3.1 document of the JSON API: django-ninja's, generated from the operations
(views.py: paths, parameters, bodies, response models), with what a signature cannot say.

django-ninja types every response ``application/json``; problems are served as
``application/problem+json``, so their responses say so here, with the words for each status
and the headers that come with 401 and 503. The browsable reference page renders this same
document.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from .problems import MAX_BODY_BYTES, PROBLEM_TYPE
from .service import api

REF = "#/components/schemas/{model}"

PROBLEM_WORDS = {
    400: "The body is not valid JSON.",
    401: "No token, or an unknown or revoked one (see WWW-Authenticate).",
    403: "The token's user lacks the role (operators only).",
    404: "Nothing with this id that the token's user may see.",
    409: "The state does not allow it (already answered, already finished, ...).",
    413: f"The body is larger than {MAX_BODY_BYTES} bytes.",
    415: "The body is not application/json.",
    422: ("The body, a query parameter or a header is invalid; `errors` points at each culprit."),
    502: "The MCP server could not be reached.",
    503: (
        "The database stayed busy past its lock timeout; nothing was stored or started. "
        "Send the same request again after `Retry-After` seconds."
    ),
}
PROBLEM_HEADERS = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}}},
    503: {"Retry-After": {"schema": {"type": "integer", "minimum": 0}}},
}


@cache
def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (the same for every request: server URLs are relative)."""
    from . import servers, views  # noqa: F401  (the operations register on ``api``)

    # Through JSON: django-ninja keys responses by int, the document (and its readers) by str.
    doc = json.loads(json.dumps(api.get_openapi_schema(path_prefix="")))
    for item in doc["paths"].values():
        for operation in item.values():
            for status, response in operation["responses"].items():
                if int(status) < 400:
                    continue
                content = response.pop("content")
                response["description"] = PROBLEM_WORDS[int(status)]
                response["content"] = {PROBLEM_TYPE: content["application/json"]}
                if int(status) in PROBLEM_HEADERS:
                    response["headers"] = PROBLEM_HEADERS[int(status)]
    return doc
