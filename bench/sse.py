"""``python -m bench.sse``: SSE parse throughput, the old hand-written reader against httpx-sse.

The MCP transport reads every streamed answer through :func:`mrtrweb.mcp.body.sse_data`
(httpx-sse since 0.2). The reader it replaced is kept below, verbatim but for its name, only so
the two are measured in the same run on the same bytes. Three shapes of stream, each split in
64 KB chunks as a socket delivers them: many progress notifications, typical results, and one
huge line (the case the old reader was rewritten for). Figures are printed, never judged.

    python -m bench.sse [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable

import httpx

from mrtrweb.mcp.body import limited_chunks, sse_data

CHUNK = 65536
LIMIT = 100_000_000


async def old_sse_data(response: httpx.Response, limit: int) -> AsyncIterator[str]:
    """mrtrweb 0.1's reader (mrtrweb/mcp/transport.py ``_sse_data``), for comparison only."""
    buffer = bytearray()
    data: list[str] = []
    event_type = ""
    async for chunk in limited_chunks(response, limit):
        search = max(len(buffer) - 1, 0)
        buffer += chunk
        start = 0
        lf = cr = -1
        while True:
            if lf < search:
                lf = buffer.find(b"\n", search) % (len(buffer) + 1)
            if cr < search:
                cr = buffer.find(b"\r", search) % (len(buffer) + 1)
            cut = min(lf, cr)
            if cut == len(buffer) or (cut == cr and cut + 1 == len(buffer)):
                break
            line = buffer[start:cut].decode("utf-8", errors="replace")
            start = search = cut + (2 if cut == cr and lf == cut + 1 else 1)
            if line == "":
                if data and event_type in ("", "message"):
                    yield "\n".join(data)
                data, event_type = [], ""
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            elif name == "event":
                event_type = value
        del buffer[:start]
    if data and event_type in ("", "message"):
        yield "\n".join(data)


def _frame(message: dict) -> bytes:
    return b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"


def _streams() -> dict[str, bytes]:
    progress = b"".join(
        _frame(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": "p-1", "progress": i, "total": 20000},
            }
        )
        + (b": ping\n\n" if i % 100 == 0 else b"")
        for i in range(20000)
    )
    result = {"jsonrpc": "2.0", "id": "a-1", "result": {"content": [{"type": "text"}]}}
    result["result"]["content"][0]["text"] = "lorem ipsum " * 5000
    huge = {"jsonrpc": "2.0", "id": "a-1", "result": {"text": "A" * 20_000_000}}
    return {
        "20k progress events": progress,
        "50 results of 60 KB": _frame(result) * 50,
        "one 20 MB line": _frame(huge),
    }


def _response(body: bytes) -> httpx.Response:
    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(body), CHUNK):
            yield body[i : i + CHUNK]

    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=chunks())


async def _measure(reader: Callable, body: bytes, repeat: int) -> tuple[float, int]:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        started = time.perf_counter()
        count = 0
        async for _data in reader(_response(body), LIMIT):
            count += 1
        best = min(best, time.perf_counter() - started)
    return best, count


async def run(repeat: int) -> list[dict]:
    rows = []
    for name, body in _streams().items():
        old, old_events = await _measure(old_sse_data, body, repeat)
        new, new_events = await _measure(sse_data, body, repeat)
        assert old_events == new_events, (name, old_events, new_events)
        mb = len(body) / 1e6
        rows.append(
            {
                "stream": name,
                "mb": round(mb, 2),
                "events": new_events,
                "old_mb_s": round(mb / old, 1),
                "new_mb_s": round(mb / new, 1),
                "old_ms": round(old * 1000, 1),
                "new_ms": round(new * 1000, 1),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="best of N runs (default 5)")
    args = parser.parse_args()
    rows = asyncio.run(run(args.repeat))
    print(
        f"{'stream':<22}{'MB':>7}{'events':>8}{'old MB/s':>10}{'new MB/s':>10}"
        f"{'old ms':>9}{'new ms':>9}"
    )
    for r in rows:
        print(
            f"{r['stream']:<22}{r['mb']:>7}{r['events']:>8}{r['old_mb_s']:>10}"
            f"{r['new_mb_s']:>10}{r['old_ms']:>9}{r['new_ms']:>9}"
        )


if __name__ == "__main__":
    main()
