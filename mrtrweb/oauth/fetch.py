"""Reading a metadata document or a JSON answer: a size cap, no redirects, JSON objects only."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from .errors import Unreachable

__all__ = ["MAX_DOCUMENT_BYTES", "Answer", "get_json", "post_form", "post_json"]

# Metadata documents and token answers are a few kilobytes; a megabyte is generous.
MAX_DOCUMENT_BYTES = 1_000_000

JSON_HEADERS = {"Accept": "application/json"}


class Answer:
    """An HTTP status and the JSON object that came with it (``None`` if it was no object)."""

    __slots__ = ("body", "headers", "http_status")

    def __init__(
        self, http_status: int, body: dict[str, Any] | None, headers: httpx.Headers
    ) -> None:
        self.http_status = http_status
        self.body = body
        self.headers = headers


async def _send(http: httpx.AsyncClient, request: httpx.Request) -> Answer:
    # Redirects are not followed: a metadata document or token answer lives where it is
    # published, and a redirect could carry a client secret elsewhere.
    try:
        response = await http.send(request, stream=True, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise Unreachable(f"Could not reach {request.url}: {exc or type(exc).__name__}") from exc
    try:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_DOCUMENT_BYTES:
                return Answer(response.status_code, None, response.headers)
            chunks.append(chunk)
    except httpx.HTTPError as exc:
        raise Unreachable(f"The answer of {request.url} broke off: {exc}") from exc
    finally:
        await response.aclose()
    try:
        body = json.loads(b"".join(chunks))
    except ValueError:
        body = None
    return Answer(response.status_code, body if isinstance(body, dict) else None, response.headers)


async def get_json(http: httpx.AsyncClient, url: str) -> Answer:
    return await _send(http, http.build_request("GET", url, headers=JSON_HEADERS))


async def post_form(
    http: httpx.AsyncClient, url: str, body: str, headers: Mapping[str, str]
) -> Answer:
    all_headers = {
        **JSON_HEADERS,
        "Content-Type": "application/x-www-form-urlencoded",
        **headers,
    }
    return await _send(http, http.build_request("POST", url, content=body, headers=all_headers))


async def post_json(http: httpx.AsyncClient, url: str, payload: Mapping[str, Any]) -> Answer:
    return await _send(
        http, http.build_request("POST", url, json=dict(payload), headers=JSON_HEADERS)
    )
