"""Server-to-client requests in a handshake-era session, answered.

A handshake-era server asks on a stream: the stream of the request waiting for the answer, or
the session's standalone stream. ``ping`` is answered; ``elicitation/create`` goes to the
caller's ``on_elicit`` (an async callable returning an ``ElicitResult``) under a question
deadline, holding the answer deadlines of the requests in flight meanwhile; anything else
(sampling and roots are deprecated and not adopted) is refused at once with -32601, never left
to hang the call. The answer is posted back as the JSON-RPC response; one that cannot be
posted is :class:`AnswerNotDelivered`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types
from pydantic import ValidationError

from .deadline import AnswerDeadline
from .envelope import dump
from .errors import AnswerNotDelivered, MCPError
from .unfit import unfit

__all__ = ["ElicitHandler", "PostMessage", "ServerRequests"]

# Logged as the handshake client's: these are its sessions' requests.
logger = logging.getLogger("mrtrweb.mcp.handshake")

ElicitHandler = Callable[[mcp_types.ElicitRequest], Awaitable[mcp_types.ElicitResult]]
# Posts a JSON-RPC message in the session (answered 202, no body); raises an MCPError.
PostMessage = Callable[[Mapping[str, Any]], Awaitable[None]]


class ServerRequests:
    """Answers one session's server-to-client requests (the transport's ``on_request``)."""

    def __init__(
        self,
        url: str,
        post: PostMessage,
        *,
        on_elicit: ElicitHandler | None,
        question_deadline: float | None,
        deadlines: set[AnswerDeadline],
    ) -> None:
        self._url = url
        self._post = post
        self._on_elicit = on_elicit
        # How long ``on_elicit`` may take (a person answering); then the answer is "cancel".
        self._question_deadline = question_deadline
        # The deadlines of the session's exchanges in flight, held while a question is out:
        # the caller's own set, which it fills and empties as requests come and go.
        self._deadlines = deadlines

    async def answer(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        method = message.get("method")
        if method == "ping":
            reply: dict[str, Any] = {"result": {}}
        elif method == "elicitation/create" and self._on_elicit is not None:
            reply = await self._elicit(message, self._on_elicit)
        else:
            # Undeclared (sampling, roots: deprecated and not adopted) or unknown: refused at
            # once, so the server's tool fails or goes on without it instead of waiting.
            logger.info("refusing server request %r from %s", method, self._url)
            reply = {
                "error": {
                    "code": mcp_types.METHOD_NOT_FOUND,
                    "message": f"mrtrweb does not support {str(method)[:100]!r}",
                }
            }
        try:
            await self._post({"jsonrpc": "2.0", "id": request_id, **reply})
        except MCPError as exc:
            raise AnswerNotDelivered(
                f"The answer to the server's {method!r} was not sent: {exc}"
            ) from exc

    async def _elicit(self, message: dict[str, Any], on_elicit: ElicitHandler) -> dict[str, Any]:
        why = unfit(message)
        try:
            if why is not None:
                raise ValueError(why)
            request = mcp_types.ElicitRequest.model_validate(
                {"method": "elicitation/create", "params": message.get("params")}
            )
        except (ValueError, ValidationError):
            return {"error": {"code": mcp_types.INVALID_PARAMS, "message": "Malformed elicitation"}}
        # The server waits on a person now: the answer deadlines of the requests in flight
        # are held (whichever stream the question came on); the question deadline bounds it.
        held = list(self._deadlines)
        for deadline in held:
            deadline.hold()
        try:
            async with asyncio.timeout(self._question_deadline):
                result = await on_elicit(request)
        except TimeoutError:
            logger.info("no answer within %ss: cancelled", self._question_deadline)
            result = mcp_types.ElicitResult(action="cancel")
        finally:
            for deadline in held:
                deadline.release()
        return {"result": dump(result)}
