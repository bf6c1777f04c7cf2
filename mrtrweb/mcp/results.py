"""What a result may be: ``complete`` (validated against the method's model) or, for the
three methods that may ask, an ``InputRequiredResult`` whose requests this client declared.
"""

from __future__ import annotations

from typing import Any, TypeVar

import mcp_types
from mcp_types.methods import INPUT_REQUIRED_METHODS
from pydantic import ValidationError

from .errors import ProtocolError, UnsupportedInputRequest

__all__ = ["complete", "outcome"]

ResultT = TypeVar("ResultT", bound=mcp_types.Result)


def outcome(
    method: str,
    result: dict[str, Any],
    model: type[ResultT],
    capabilities: mcp_types.ClientCapabilities,
) -> ResultT | mcp_types.InputRequiredResult:
    if result.get("resultType") == "input_required":
        return _input_required(method, result, capabilities)
    return complete(method, result, model)


def complete(method: str, result: dict[str, Any], model: type[ResultT]) -> ResultT:
    result_type = result.get("resultType", "complete")
    if result_type == "input_required":
        raise ProtocolError(f"{method} may not return an InputRequiredResult")
    if result_type != "complete":
        raise ProtocolError(f"{method}: unknown resultType {result_type!r}")
    try:
        return model.model_validate(result)
    except ValidationError as exc:
        raise ProtocolError(f"{method}: malformed result: {exc.errors()[:3]}") from exc


def _input_required(
    method: str, result: dict[str, Any], capabilities: mcp_types.ClientCapabilities
) -> mcp_types.InputRequiredResult:
    if method not in INPUT_REQUIRED_METHODS:
        raise ProtocolError(f"{method} may not return an InputRequiredResult")
    requests = result.get("inputRequests") or {}
    if not isinstance(requests, dict):
        raise ProtocolError(f"{method}: inputRequests is not an object")
    state = result.get("requestState")
    if state is not None and not isinstance(state, str):
        raise ProtocolError(f"{method}: requestState is not a string")
    if not requests and state is None:
        raise ProtocolError(f"{method}: InputRequiredResult with neither requests nor state")
    unsupported = [key for key, req in requests.items() if not _declared(req, capabilities)]
    if unsupported:
        raise UnsupportedInputRequest(
            f"{method}: the server asked for input this client did not declare "
            f"({', '.join(repr(k) for k in unsupported)})",
            raw_result=result,
            keys=unsupported,
        )
    try:
        return mcp_types.InputRequiredResult.model_validate(result)
    except ValidationError as exc:
        raise UnsupportedInputRequest(
            f"{method}: malformed input requests: {exc.errors()[:3]}",
            raw_result=result,
            keys=list(requests),
        ) from exc


def _declared(request: Any, caps: mcp_types.ClientCapabilities) -> bool:
    """Whether the request is of a kind (and mode) declared in our capabilities."""
    if not isinstance(request, dict):
        return False
    method = request.get("method")
    if method == "elicitation/create":
        if caps.elicitation is None:
            return False
        params = request.get("params")
        mode = params.get("mode", "form") if isinstance(params, dict) else None
        if mode == "url":
            return caps.elicitation.url is not None
        if mode == "form":
            # `elicitation: {}` means form mode only.
            return caps.elicitation.form is not None or caps.elicitation.url is None
        return False
    if method == "sampling/createMessage":
        return caps.sampling is not None
    if method == "roots/list":
        return caps.roots is not None
    return False
