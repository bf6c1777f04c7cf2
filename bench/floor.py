"""The baselines the app is measured against, on the same server in the same run.

- :class:`RawClient`: hand-built JSON-RPC over one pooled ``httpx`` client, the least any MCP
  client can do (the floor).
- :func:`fastmcp_round`: fastmcp's own client, which drives input-required rounds in-process
  through an elicitation handler.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import httpx

from .stack import ARGUMENTS

PROTOCOL = "2026-07-28"
_META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "mrtrweb-bench-raw", "version": "1"},
}


class RawClient:
    def __init__(self, url: str, *, connections: int = 10) -> None:
        self.url = url
        self.http = httpx.AsyncClient(
            timeout=60.0,
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )
        self._ids = itertools.count(1)

    async def close(self) -> None:
        await self.http.aclose()

    async def call(
        self, tool: str, *, responses: dict[str, Any] | None = None, state: str | None = None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": tool, "arguments": ARGUMENTS, "_meta": _META}
        if responses is not None:
            params["inputResponses"] = responses
        if state is not None:
            params["requestState"] = state
        body = {"jsonrpc": "2.0", "id": next(self._ids), "method": "tools/call", "params": params}
        response = await self.http.post(
            self.url,
            content=json.dumps(body),
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": PROTOCOL,
                "Mcp-Method": "tools/call",
                "Mcp-Name": tool,
            },
        )
        response.raise_for_status()
        message = response.json()
        if "error" in message:
            raise RuntimeError(f"server error: {message['error']}")
        return message["result"]

    async def park(self, tool: str) -> tuple[str, dict[str, Any]]:
        """The first call: returns (requestState, inputRequests)."""
        result = await self.call(tool)
        if result.get("resultType") != "input_required":
            raise RuntimeError(f"expected input_required, got {result}")
        return result["requestState"], result["inputRequests"]

    async def retry(self, tool: str, state: str) -> dict[str, Any]:
        answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
        result = await self.call(tool, responses=answer, state=state)
        if result.get("resultType") == "input_required" or result.get("isError"):
            raise RuntimeError(f"the retry did not complete: {result}")
        return result

    async def timed_retry(self, tool: str) -> float:
        """Park a round (not timed), then the seconds its retry takes: the P1 floor."""
        state, _ = await self.park(tool)
        started = time.perf_counter()
        await self.retry(tool, state)
        return time.perf_counter() - started

    async def flow(self, tool: str) -> None:
        state, _ = await self.park(tool)
        await self.retry(tool, state)


async def fastmcp_rounds(url: str, tool: str, repeats: int) -> list[float]:
    """Seconds from fastmcp's elicitation handler answering to ``call_tool`` returning."""
    from fastmcp import Client

    answered: list[float] = []

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        answered.append(time.perf_counter())
        return {"ok": True}

    samples: list[float] = []
    async with Client(url, elicitation_handler=handler) as client:
        for _ in range(repeats):
            answered.clear()
            result = await client.call_tool(tool, ARGUMENTS)
            done = time.perf_counter()
            if not answered or result.is_error:
                raise RuntimeError("fastmcp's client did not go through the round")
            samples.append(done - answered[-1])
    return samples
