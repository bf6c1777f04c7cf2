"""Reading one ``elicitation/create`` input request, and matching questions across rounds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types
from pydantic import BaseModel, ValidationError

ELICIT_METHOD = "elicitation/create"


class InvalidElicitation(ValueError):
    """Not a well-formed ``elicitation/create`` request."""


@dataclass(frozen=True)
class FormRequest:
    message: str
    schema: dict[str, Any]  # the requestedSchema as sent; classify() it before rendering


@dataclass(frozen=True)
class UrlRequest:
    message: str
    url: str  # describe_url() it before showing; never fetch it


def parse_request(request: Mapping[str, Any] | BaseModel) -> FormRequest | UrlRequest:
    """Check one input request (``{"method", "params"}`` or an ``mcp_types.ElicitRequest``).

    A missing ``mode`` means form mode (spec: clients MUST treat it so); the public
    ``mcp_types`` URL model would otherwise accept a mode-less request as URL mode.
    """
    if isinstance(request, BaseModel):
        request = request.model_dump(by_alias=True, exclude_none=True)
    if not isinstance(request, Mapping):
        raise InvalidElicitation("an input request must be a JSON object")
    if request.get("method") != ELICIT_METHOD:
        raise InvalidElicitation(f"not an {ELICIT_METHOD} request: {request.get('method')!r}")
    params = request.get("params")
    if not isinstance(params, Mapping):
        raise InvalidElicitation("elicitation/create needs params")
    mode = params.get("mode", "form")
    try:
        if mode == "form":
            form = mcp_types.ElicitRequestFormParams.model_validate(params, by_name=False)
            if not isinstance(params.get("requestedSchema"), Mapping):
                raise InvalidElicitation("form-mode elicitation needs a requestedSchema object")
            # Keep the schema exactly as sent (the model's copy is the same dict's contents).
            return FormRequest(message=form.message, schema=dict(params["requestedSchema"]))
        if mode == "url":
            url = mcp_types.ElicitRequestURLParams.model_validate(params, by_name=False)
            return UrlRequest(message=url.message, url=url.url)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "params"
        raise InvalidElicitation(f"{where}: {first['msg']}") from None
    raise InvalidElicitation(f"unknown elicitation mode {mode!r}")


def answers_match(
    old_request: tuple[str, Mapping[str, Any] | BaseModel],
    new_request: tuple[str, Mapping[str, Any] | BaseModel],
) -> bool:
    """Whether an answer saved for ``old_request`` may pre-fill ``new_request``.

    Each side is ``(key, input request)``. True only for two form-mode elicitations with the
    same key, the same message and the same schema; the schemas are compared as canonical
    JSON, so key order does not matter but ``1`` and ``1.0`` or ``true`` and ``1`` differ.
    URL-mode requests never match: their answer is consent, which must be given afresh.
    """
    old_key, old = old_request
    new_key, new = new_request
    if old_key != new_key:
        return False
    try:
        old_parsed = parse_request(old)
        new_parsed = parse_request(new)
    except InvalidElicitation:
        return False
    if not isinstance(old_parsed, FormRequest) or not isinstance(new_parsed, FormRequest):
        return False
    if old_parsed.message != new_parsed.message:
        return False
    old_schema = _canonical(old_parsed.schema)
    return old_schema is not None and old_schema == _canonical(new_parsed.schema)


def _canonical(schema: Mapping[str, Any]) -> str | None:
    try:
        return json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
