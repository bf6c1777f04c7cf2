#!/usr/bin/env python3
"""Start a call on mrtrweb, wait while a person answers it in the browser, print the result.

    export MRTR_URL=http://127.0.0.1:8000 MRTR_TOKEN=mrtr_...   # a token from "API tokens"
    python wait_for_answer.py --server demo --tool approve_deployment \\
        --arguments '{"version": "v2.5.0"}'

It prints the page of every question waiting for a person (open it and answer), and the
call's result once the call has finished. Exit status: 0 completed, 1 failed or cancelled or
expired, 2 a usage or HTTP error. Needs only httpx (``pip install httpx``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from typing import Any

import httpx

WAIT_SECONDS = 30  # per request; the API holds each request up to 60 s


def api_error(response: httpx.Response) -> str:
    """A problem+json answer in one line: title, detail and where each error is."""
    try:
        problem = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    where = "; ".join(
        f"{e.get('pointer') or e.get('parameter') or ''}: {e['detail']}"
        for e in problem.get("errors", [])
    )
    return f"{problem.get('title')} ({response.status_code}): {problem.get('detail')} {where}"


def start(api: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    """POST /calls, retried when the connection drops or the site is busy (503): the
    Idempotency-Key makes a retry return the call the first try started, never a second."""
    key = str(uuid.uuid4())
    for attempt in range(1, 4):
        try:
            response = api.post("/calls", json=body, headers={"Idempotency-Key": key})
        except httpx.TransportError:
            if attempt == 3:
                raise
            time.sleep(attempt)
            continue
        if response.status_code != 503 or attempt == 3:
            return response
        time.sleep(float(response.headers.get("Retry-After", "2")))
    raise AssertionError("unreachable")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("MRTR_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--server", required=True, help="the connection's name")
    parser.add_argument("--tool", required=True)
    parser.add_argument("--arguments", default="{}", help="the tool's arguments as JSON")
    parser.add_argument("--assignee", help="username of the person who should answer")
    options = parser.parse_args()
    token = os.environ.get("MRTR_TOKEN")
    if not token:
        parser.error("set MRTR_TOKEN to an API token (mrtr_...)")

    body: dict[str, Any] = {
        "server": options.server,
        "method": "tools/call",
        "name": options.tool,
        "arguments": json.loads(options.arguments),
    }
    if options.assignee:
        body["assignee"] = options.assignee

    with httpx.Client(
        base_url=options.url.rstrip("/") + "/api/v1",
        headers={"Authorization": f"Bearer {token}"},
        # Longer than the longest wait, so a held request is never cut short.
        timeout=WAIT_SECONDS + 15,
    ) as api:
        response = start(api, body)
        if response.status_code not in (200, 201):  # 200: a retry that found its call
            print(api_error(response), file=sys.stderr)
            return 2
        call = response.json()
        print(f"Started call {call['id']}: {call['url']}", flush=True)
        announced: set[int] = set()
        while not call["finished"]:
            for round in call["rounds"]:
                if round["status"] == "pending" and round["id"] not in announced:
                    announced.add(round["id"])
                    print(f"Waiting for a person to answer: {round['url']}", flush=True)
            response = api.get(f"/calls/{call['id']}", params={"wait": WAIT_SECONDS})
            if response.status_code != 200:
                print(api_error(response), file=sys.stderr)
                return 2
            call = response.json()

    print(f"The call {call['status']}.", flush=True)
    if call["status"] != "completed":
        print(call["error"], file=sys.stderr)
        return 1
    print(json.dumps(call["result"], indent=2, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
