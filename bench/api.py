"""The JSON API's own cost, this tree against another (by default the commit it branched from).

    python -m bench.api                  # this tree vs. the merge base with main
    python -m bench.api --old REF -n 400

Each tree runs in a child process (``python -m bench.api --child``) on its own copy of the
``mrtrweb`` package, with the same Python, dependencies, settings and a fresh SQLite test
database; the children alternate (old, new, old, new) so drift on a shared machine hits both.
Requests go through Django's test client (the whole middleware stack, no network), on rows
made directly with the ORM (no MCP server is contacted):

- ``GET /api/v1/calls/<id>``: a waiting call with one pending round (``200``);
- ``POST /api/v1/rounds/<id>/responses`` with an answer over the form's maximum: token,
  lookup, body parsing, the strict model and the answers' validation, then the ``422``
  problem (the accepted answer would go on to the MCP server, which is not the API's cost).

Printed: the median and p90 per request of each tree, and new/old. Numbers are printed,
never judged.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FORM = {
    "approval": {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Deploy?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "approve": {"type": "boolean", "title": "Approve"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                    "window": {"type": "string", "enum": ["now", "tonight"]},
                },
                "required": ["approve"],
            },
        },
    }
}
ANSWER = {"responses": {"approval": {"action": "accept", "content": {"replicas": 99}}}}


def _child(n: int) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mrtrweb.settings")
    os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    import mrtrweb
    from mrtrweb.api.models import ApiToken
    from mrtrweb.calls.models import Call, Round
    from mrtrweb.servers.models import Connection

    setup_test_environment()
    connection.creation.create_test_db(verbosity=0)
    user = get_user_model().objects.create_user("bench", password="pw-bench-123")
    _, token = ApiToken.issue(user, "bench")
    conn = Connection.objects.create(name="peer", url="http://127.0.0.1:9/mcp")
    call = Call.objects.create(
        connection=conn, method=Call.Method.TOOL, target="approve", started_by=user
    )
    Call.objects.filter(pk=call.pk).update(status=Call.Status.WAITING)
    round_ = Round.objects.create(call=call, index=1, input_requests=FORM, assigned_user=user)
    client = Client(headers={"Authorization": f"Bearer {token}"})
    body = json.dumps(ANSWER)

    def get() -> Any:
        return client.get(f"/api/v1/calls/{call.pk}")

    def post() -> Any:
        return client.post(
            f"/api/v1/rounds/{round_.pk}/responses", body, content_type="application/json"
        )

    out: dict[str, Any] = {"package": str(Path(mrtrweb.__file__).parent)}
    for name, request, status in (("get_call", get, 200), ("post_responses", post, 422)):
        first = request()
        assert first.status_code == status, first.content[:500]
        for _ in range(20):  # warm-up
            request()
        times = []
        for _ in range(n):
            started = time.perf_counter()
            request()
            times.append(time.perf_counter() - started)
        out[name] = times
        out[name + "_body"] = json.loads(first.content)
    connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)
    return out


def _tree(ref: str, into: Path) -> Path:
    """``mrtrweb/`` as it is at ``ref``, unpacked under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "mrtrweb"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _run(package_root: Path, n: int) -> dict[str, Any]:
    # The package root first, then this repository for the bench package itself.
    env = {**os.environ, "PYTHONPATH": f"{package_root}{os.pathsep}{REPO}"}
    done = subprocess.run(
        [sys.executable, "-m", "bench.api", "--child", "-n", str(n)],
        cwd=package_root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(done.stdout[-3000:] + done.stderr[-3000:])
    return json.loads(done.stdout.splitlines()[-1])


def _shape(value: Any) -> Any:
    """A body without its times (each run makes its rows anew)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items() if not k.endswith("At")}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


def _ms(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.9)] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", help="the git ref to compare with (default: merge base)")
    parser.add_argument("-n", type=int, default=300, help="timed requests per endpoint and run")
    parser.add_argument("--rounds", type=int, default=2, help="old/new alternations")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.n)))
        return 0
    ref = (
        args.old
        or subprocess.run(
            ["git", "-C", str(REPO), "merge-base", "HEAD", "main"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    results: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    bodies: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="mrtrweb-bench-api-") as tmp:
        trees = {"old": _tree(ref, Path(tmp)), "new": REPO}
        for _ in range(args.rounds):
            for which, root in trees.items():
                found = _run(root, args.n)
                assert Path(found["package"]).parent == root.resolve(), found["package"]
                for key in ("get_call", "post_responses"):
                    results[which].setdefault(key, []).extend(found[key])
                    bodies.setdefault(key, {})[which] = found[key + "_body"]
    print(f"old = {ref[:12]}, new = this tree; {args.n} x {args.rounds} requests each")
    for key, label in (
        ("get_call", "GET  /api/v1/calls/<id>"),
        ("post_responses", "POST /api/v1/rounds/<id>/responses (422)"),
    ):
        old_med, old_p90 = _ms(results["old"][key])
        new_med, new_p90 = _ms(results["new"][key])
        old_body, new_body = (_shape(bodies[key][w]) for w in ("old", "new"))
        same = "same body" if old_body == new_body else "BODIES DIFFER"
        print(
            f"{label:44} old {old_med:6.2f} ms (p90 {old_p90:6.2f})   "
            f"new {new_med:6.2f} ms (p90 {new_p90:6.2f})   new/old {new_med / old_med:4.2f}"
            f"   {same}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
