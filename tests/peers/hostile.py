"""A hostile MCP 2026-07-28 server: every attack of ``_hostile_corpus`` on an endpoint of its own.

Run: ``python -m tests.peers.hostile --port P``. Each attack is a whole server at
``http://127.0.0.1:P/a/<attack>/mcp`` (``server/discover``, the lists, and ``tools/call``,
``prompts/get`` or ``resources/read``), so a connection registered on it meets the attack in
its catalog as well as in its calls, and one attack never spoils another's catalog.

Test-only routes:

- ``/canary/<anything>`` (any method): records a hit. Every attack that smuggles a URL points
  it here, so anything that follows, fetches or pre-fetches one (the app or a browser) shows.
- ``GET /_hostile/hits`` (``DELETE`` clears): the canary hits, ``{"path", "method", "headers"}``.
- ``GET /_hostile/seen/<attack>`` (``DELETE`` clears): what that endpoint received, oldest first
  (the last 200): ``{"method",
  "rpc_method", "headers", "params"}`` (params without ``_meta``; a ``requestState`` longer
  than 200 characters is replaced by its length and SHA-256).
- ``GET /_hostile/attacks``: the corpus (slug and summary of each attack).

The answers are hand-written JSON-RPC (no SDK in the way), so each attack can be exactly as
wrong as it says. See tests/peers/README.md for the list.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict, deque
from typing import Any

from tests.peers._common import Receive, Scope, Send, base_parser, read_body, send_json, serve
from tests.peers._hostile_corpus import ATTACKS, Ctx, default_listing

SEEN_LIMIT = 200


class HostileServer:
    """The ASGI app: routes ``/a/<slug>/mcp`` to the attack, and keeps the test routes."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.hits: list[dict[str, Any]] = []
        self.seen: dict[str, deque[dict[str, Any]]] = defaultdict(lambda: deque(maxlen=SEEN_LIMIT))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if path.startswith("/canary/"):
            self.hits.append(
                {
                    "path": path,
                    "method": scope["method"],
                    "headers": {
                        k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]
                    },
                }
            )
            await send_json(send, 200, {"canary": path})
            return
        if path == "/_hostile/hits":
            if scope["method"] == "DELETE":
                self.hits.clear()
            await send_json(send, 200, self.hits)
            return
        if path.startswith("/_hostile/seen/"):
            seen = self.seen[path.removeprefix("/_hostile/seen/")]
            if scope["method"] == "DELETE":
                seen.clear()
            await send_json(send, 200, list(seen))
            return
        if path == "/_hostile/attacks":
            await send_json(send, 200, [{"slug": a.slug, "summary": a.summary} for a in ATTACKS])
            return
        parts = path.strip("/").split("/")
        attack = _BY_SLUG.get(parts[1]) if len(parts) == 3 and parts[0] == "a" else None
        if attack is None or parts[2] != "mcp" or scope["method"] != "POST":
            await send_json(send, 404, {"error": "not found"})
            return
        body = await read_body(receive)
        try:
            request = json.loads(body)
        except ValueError:
            request = {}
        if not isinstance(request, dict):
            request = {}
        ctx = Ctx(
            attack=attack.slug,
            request=request,
            headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]],
            base=f"http://127.0.0.1:{self.port}",
            receive=receive,
        )
        self._remember(ctx)
        handler = attack.handlers.get(ctx.rpc_method) or default_listing(ctx.rpc_method)
        await handler(ctx, send)

    def _remember(self, ctx: Ctx) -> None:
        params = dict(ctx.params)
        params.pop("_meta", None)
        state = params.get("requestState")
        if isinstance(state, str) and len(state) > 200:
            params["requestState"] = {
                "length": len(state),
                "sha256": hashlib.sha256(state.encode("utf-8", "surrogatepass")).hexdigest(),
            }
        self.seen[ctx.attack].append(
            {
                "rpc_method": ctx.rpc_method,
                "headers": ctx.headers,
                "params": params,
            }
        )


_BY_SLUG = {attack.slug: attack for attack in ATTACKS}


def main() -> None:
    parser = base_parser(__doc__ or "")
    args = parser.parse_args()
    serve(HostileServer(args.port), args.host, args.port)


if __name__ == "__main__":
    main()
