"""The access matrix: every role against someone else's round and call, on every view and verb.

Roles: anonymous; an end user who is not involved; the caller; the named user a round is
routed to; a member of the group a round is routed to; another member after the first one
claimed it; an admin (Admins group); an operator (Operators group, not an admin).

Objects: a call started by the caller whose round is routed to a named user, and one whose
round is routed to a group, both parked by the real fastmcp peer through the engine.

Expected: 302 to sign-in for anonymous people; 404 for what a person may not see or act on
(exactly as for something that does not exist); 403 for pages gated by role (the dashboard
for non-admins, the operators' console for non-operators); 409 when access is granted but
the state does not allow the action. Every POST goes through a client that enforces CSRF,
and a refused POST changes nothing: not the database, not what the server receives.

The pages are collected from the URLconf: a view that is not in this matrix fails
:func:`test_every_view_is_in_the_matrix`. One test per row: every role runs on the same
parked round, each inside a savepoint rolled back after it, and a failure lists every role
that got something else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.conf import settings
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from mrtrweb.authorizations.models import Authorization
from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.elicitation import field_name_for
from mrtrweb.env import IN_MEMORY_CHANNEL_LAYER
from mrtrweb.servers.catalog import ensure_catalog
from mrtrweb.servers.models import Connection
from tests.inbox.support import (
    APPROVERS,
    admin,
    ask,
    call_links,
    expose,
    operator,
    person,
    round_links,
    state,
    to_group,
    to_user,
)

pytestmark = pytest.mark.django_db

ROLES = (
    "anonymous",
    "outsider",
    "caller",
    "assignee",
    "member",
    "after_claim",
    "admin",
    "operator",
)
ROUTINGS = ("user", "group")


# -- the world -------------------------------------------------------------------------------


@dataclass
class World:
    peer: Any
    users: dict[str, Any]
    connections: dict[str, Connection]
    _rounds: dict[str, Round] = field(default_factory=dict)

    def round(self, routing: str) -> Round:
        """The caller's round routed to the named user or to the group (parked on first use)."""
        if routing not in self._rounds:
            self._rounds[routing] = ask(self.connections[routing], self.users["caller"])
        return self._rounds[routing]

    def call(self, routing: str) -> Call:
        return self.round(routing).call

    def client(self, role: str) -> Client:
        client = Client(enforce_csrf_checks=True)
        if role != "anonymous":
            client.force_login(self.users[role])
        return client

    def prepare(self, role: str, routing: str) -> None:
        """The "after_claim" role is a member who comes to a group round someone claimed."""
        if role == "after_claim" and routing == "group":
            engine.claim(self.round("group"), self.users["member"])


@pytest.fixture
def world(fastmcp_peer: Any) -> World:
    users = {
        "outsider": person("olga"),
        "caller": person("carl"),
        "assignee": person("bob"),
        "member": person("ada", APPROVERS),
        "after_claim": person("bea", APPROVERS),
        "admin": admin("alice"),
        "operator": operator("otto"),
    }
    connections = {
        "user": to_user(fastmcp_peer, users["assignee"]),
        # End users may start approve_deploy here; nothing is exposed on the other one.
        "group": expose(to_group(fastmcp_peer, APPROVERS), "approve_deploy"),
    }
    return World(fastmcp_peer, users, connections)


def csrf_token(client: Client) -> str:
    """The CSRF token a browser would have: from the cookie the sign-in form sets."""
    client.get(reverse("login"))
    return client.cookies[settings.CSRF_COOKIE_NAME].value


def send(client: Client, method: str, url: str, data: dict[str, Any] | None = None) -> Any:
    if method == "GET":
        return client.get(url)
    return client.post(url, {**(data or {}), "csrfmiddlewaretoken": csrf_token(client)})


def everything() -> dict[str, Any]:
    """What a refused request must leave alone.

    Nothing reaches a server without going through these rows first (a call is created, a
    round changes status), so an unchanged database means nothing was sent either.
    """
    return {
        **state(),
        "connections": list(
            Connection.objects.order_by("pk").values("pk", "enabled", "url", "routing")
        ),
    }


def is_login_redirect(response: Any) -> bool:
    return response.status_code == 302 and response["Location"].startswith(reverse("login"))


# -- calls and rounds: one explicit row per view, verb and routing ----------------------------

# Columns follow ROLES. "+"/"-" after 200: the listing shows / does not show the object.
# A member who comes to a group round another member took is told who took it and when (the
# "taken" page: 200 to look, 409 to answer or claim), never a 404: they were asked too.
# The user-routed connection exposes no tool, so only an admin may start its call again
# (restarting is starting: test_starting_again_is_starting_a_call).
MATRIX = """
                         anonymous outsider caller assignee member after_claim admin operator
user  calls:call GET        302      404     200     200     404      404      200    404
user  live:next GET         302      404     303     303     404      404      303    404
user  calls:restart POST    302      404     404     404     404      404      409    404
user  calls:round GET       302      404     200     200     404      404      200    404
user  calls:round POST      302      404     404     303     404      404      303    404
user  calls:retry POST      302      404     404     409     404      404      409    404
user  calls:claim POST      302      404     404     409     404      404      409    404
user  calls:release POST    302      404     404     404     404      404      409    404
group calls:call GET        302      404     200     404     200      404      200    404
group live:next GET         302      404     303     404     303      404      303    404
group calls:restart POST    302      404     409     404     409      404      409    404
group calls:round GET       302      404     200     404     200      200      200    404
group calls:round POST      302      404     404     404     303      409      303    404
group calls:retry POST      302      404     404     404     409      404      409    404
group calls:claim POST      302      404     404     404     303      409      303    404
group calls:release POST    302      404     404     404     404      404      409    404
user  inbox:index GET       302      200-    200-    200+    200-     200-     200-   200-
user  inbox:history GET     302      200-    200+    200-    200-     200-     200-   200-
user  calls:list GET        302      200-    200+    200+    200-     200-     200+   200-
group inbox:index GET       302      200-    200-    200-    200+     200-     200-   200-
group inbox:history GET     302      200-    200+    200-    200-     200-     200-   200-
group calls:list GET        302      200-    200+    200-    200+     200-     200+   200-
"""

# Which object each view is about, how to reach it, and what a listing should show of it.
ON_CALL = ("calls:call", "calls:restart", "live:next")
ON_ROUND = ("calls:round", "calls:retry", "calls:claim", "calls:release")
LISTS_ROUNDS = ("inbox:index",)
LISTS_CALLS = ("inbox:history", "calls:list")
POST_DATA = {"calls:round": {"action": "decline"}}


@dataclass(frozen=True)
class Row:
    routing: str
    name: str
    method: str
    expected: dict[str, str]  # role -> cell

    @property
    def id(self) -> str:
        return f"{self.routing}-{self.name}-{self.method}"


def parse_matrix(text: str) -> list[Row]:
    lines = [line.split() for line in text.strip().splitlines()]
    header, rows = lines[0], lines[1:]
    assert tuple(header) == ROLES
    parsed = []
    for routing, name, method, *cells in rows:
        assert len(cells) == len(ROLES), name
        parsed.append(Row(routing, name, method, dict(zip(ROLES, cells, strict=True))))
    return parsed


ROWS = parse_matrix(MATRIX)


def url_for(world: World, name: str, routing: str) -> str:
    if name in ON_CALL:
        return reverse(name, args=[world.call(routing).pk])
    if name in ON_ROUND:
        return reverse(name, args=[world.round(routing).pk])
    return reverse(name)


def each_role(world: World, routing: str, check: Callable[[str], str]) -> None:
    """Run ``check`` as every role on the same objects, undoing each role's effects after.

    ``check`` returns what went wrong ("" if nothing did); all roles run, then the test fails
    with every difference, so one run shows the whole row.
    """
    world.round(routing)  # parked once, outside the rolled-back part
    problems = []
    for role in ROLES:
        with transaction.atomic():
            world.prepare(role, routing)
            problem = check(role)
            transaction.set_rollback(True)
        if problem:
            problems.append(f"{role}: {problem}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_calls_rounds_and_inbox(world: World, row: Row) -> None:
    url = url_for(world, row.name, row.routing)

    def check(role: str) -> str:
        expected = row.expected[role]
        code, listed = int(expected[:3]), expected[3:]
        before = everything()
        response = send(world.client(role), row.method, url, POST_DATA.get(row.name))
        if response.status_code != code:
            return f"expected {code}, got {response.status_code}"
        if code == 302 and not is_login_redirect(response):
            return f"redirected to {response['Location']}, not to sign in"
        if listed:
            if row.name in LISTS_ROUNDS:
                wanted, shown = world.round(row.routing).pk, round_links(response)
            else:
                wanted, shown = world.call(row.routing).pk, call_links(response)
            if (wanted in shown) != (listed == "+"):
                return "listed" if listed == "-" else "not listed"
        if row.method == "POST" and code != 303 and everything() != before:
            return f"a refused POST ({code}) changed something"
        return ""

    each_role(world, row.routing, check)


# -- pages gated by role: the dashboard (admins) and the operators' console --------------------

GATED = {"dashboard": "admin", "servers": "operator", "policies": "operator"}


def patterns_of(namespace: str) -> list[URLPattern]:
    resolver = get_resolver()
    if namespace not in resolver.namespace_dict:
        return []
    _, sub = resolver.namespace_dict[namespace]
    return [p for p in sub.url_patterns if isinstance(p, URLPattern) and p.name]


# Pages whose number is not a call's: each gets an object of its own kind, which exists (an
# id borrowed from a call named a person or group only when the ids happened to coincide).
OTHER_OBJECTS: dict[str, Callable[[World], int]] = {
    "person": lambda world: world.users["member"].pk,
    "person_active": lambda world: world.users["member"].pk,
    "person_link": lambda world: world.users["member"].pk,
    "group": lambda world: world.connections["group"].route_group.pk,
}


def gated_url(world: World, namespace: str, pattern: URLPattern) -> str:
    kwargs: dict[str, Any] = {}
    for name, converter in pattern.pattern.converters.items():
        kind = type(converter).__name__
        if kind == "IntConverter" and pattern.name in OTHER_OBJECTS:
            kwargs[name] = OTHER_OBJECTS[pattern.name](world)
        elif kind == "IntConverter":
            kwargs[name] = world.call("group").pk
        elif kind in ("SlugConverter", "StringConverter"):
            kwargs[name] = world.connections["group"].name
        else:  # a new converter: teach the matrix what to pass
            raise AssertionError(f"{namespace}:{pattern.name} takes {name} ({kind})")
    return reverse(f"{namespace}:{pattern.name}", kwargs=kwargs)


GATED_ROWS = [
    (namespace, pattern.name, method)
    for namespace in GATED
    for pattern in patterns_of(namespace)
    for method in ("GET", "POST")
]


@pytest.mark.parametrize(
    ("namespace", "name", "method"),
    GATED_ROWS,
    ids=[f"{ns}:{n}-{m}" for ns, n, m in GATED_ROWS],
)
def test_pages_gated_by_role(world: World, namespace: str, name: str, method: str) -> None:
    (pattern,) = [p for p in patterns_of(namespace) if p.name == name]
    url = gated_url(world, namespace, pattern)
    round_pk = world.round("group").pk
    # What an action form would post, so a refusal is a refusal of something real.
    data = {"one": f"cancel:{round_pk}", "action": "cancel", "rounds": [round_pk], "confirmed": "1"}
    holder = GATED[namespace]

    def check(role: str) -> str:
        before = everything()
        response = send(world.client(role), method, url, data)
        code = response.status_code
        if role == holder:
            # The role's own POSTs are that console's tests; its pages must open.
            if method == "GET" and (
                code not in (200, 302, 303, 405) or is_login_redirect(response)
            ):
                return f"the {holder} got {code}"
            return ""
        if role == "anonymous" and not is_login_redirect(response):
            return f"expected a redirect to sign in, got {code}"
        if role != "anonymous" and code != 403:
            return f"expected 403, got {code}"
        if method == "POST" and everything() != before:
            return "a refused POST changed something"
        return ""

    each_role(world, "group", check)


# -- starting calls: the pick list, a connection's page, and starting a tool ------------------

# The "exposed" connection is the group-routed one (approve_deploy exposed to end users); the
# "hidden" one exposes nothing. A tool that is not exposed is refused as if it were not
# listed: the page again (200), and no call.
START_MATRIX = """
                               anonymous outsider caller assignee member after_claim admin operator
exposed starting:pick    GET      302      200     200     200     200      200      200    200
exposed starting:start   GET      302      200     200     200     200      200      200    200
hidden  starting:start   GET      302      404     404     404     404      404      200    200
exposed approve_deploy   POST     302      303     303     303     303      303      303    303
exposed echo             POST     302      200     200     200     200      200      303    303
hidden  echo             POST     302      404     404     404     404      404      303    303
"""
START_ROWS = parse_matrix(START_MATRIX)
START_DATA = {
    "approve_deploy": {f"arg-{field_name_for('service')}": "api", "start": "1"},
    "echo": {f"arg-{field_name_for('text')}": "hi", "start": "1"},
}


def start_url(world: World, which: str, tool: str = "") -> str:
    conn = world.connections["group" if which == "exposed" else "user"]
    url = reverse("starting:start", kwargs={"connection": conn.name})
    return f"{url}?tool={tool}" if tool else url


@pytest.mark.parametrize("row", START_ROWS, ids=[r.id for r in START_ROWS])
def test_starting_calls(world: World, row: Row) -> None:
    for conn in world.connections.values():
        ensure_catalog(conn)  # listed once, outside the rolled-back part
    if row.name == "starting:pick":
        url, data = reverse(row.name), None
    elif row.name == "starting:start":
        url, data = start_url(world, row.routing), None
    else:
        url, data = start_url(world, row.routing, row.name), START_DATA[row.name]

    def check(role: str) -> str:
        code = int(row.expected[role])
        before = everything()
        response = send(world.client(role), row.method, url, data)
        if response.status_code != code:
            return f"expected {code}, got {response.status_code}"
        if code == 302 and not is_login_redirect(response):
            return f"redirected to {response['Location']}, not to sign in"
        if row.method == "POST" and code != 303 and everything() != before:
            return f"a refused POST ({code}) changed something"
        if code == 303 and not Call.objects.filter(started_by=world.users[role]).exists():
            return "no call was started"
        return ""

    each_role(world, "group", check)


def test_starting_again_is_starting_a_call(world: World) -> None:
    """A restart obeys the start pages' rule: end users restart only tools exposed to them,
    and nobody restarts on a disabled connection."""
    gone = Connection.objects.create(name="gone", url="http://127.0.0.1:9/mcp")
    failed = engine.start_call(
        connection=gone,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=world.users["caller"],
    )
    assert failed.status == Call.Status.FAILED
    url = reverse("calls:restart", args=[failed.pk])

    def restart(role: str) -> int:
        before = Call.objects.count()
        code = send(world.client(role), "POST", url).status_code
        assert Call.objects.count() == before + (code == 303)
        return code

    caller_page = world.client("caller").get(failed.get_absolute_url())
    assert url not in caller_page.content.decode()  # no Start again button
    assert restart("caller") == 404
    assert restart("admin") == 303
    expose(gone, "approve_deploy")
    assert url in world.client("caller").get(failed.get_absolute_url()).content.decode()
    assert restart("caller") == 303
    gone.enabled = False
    gone.save()
    assert restart("caller") == 404
    assert restart("admin") == 404


# -- OAuth accounts: connecting, disconnecting, and the operators' OAuth panel ----------------

# "exposed": the group-routed connection (end users may start a tool on it); "hidden": the
# user-routed one (nothing exposed). Both use OAuth per person, the default, on a peer that
# does not use OAuth, so connecting is refused with the reason (502) to whoever may try.
# Disconnecting acts on the caller's own authorization on "exposed". The callback without a
# pending request is refused (400 to someone signed out, else 303 to the refusal's own page);
# that page with no refusal to show goes on to the connected accounts (303).
OAUTH_MATRIX = """
                             anonymous outsider caller assignee member after_claim admin operator
exposed connect         GET        302      502    502      502    502         502   502      502
exposed connect         POST       302      502    502      502    502         502   502      502
hidden  connect         GET        302      404    404      404    404         404   502      502
hidden  connect         POST       302      404    404      404    404         404   502      502
exposed accounts        GET        302      200    200      200    200         200   200      200
exposed failed          GET        302      303    303      303    303         303   303      303
exposed client-metadata GET        200      200    200      200    200         200   200      200
exposed callback        GET        400      303    303      303    303         303   303      303
exposed disconnect      POST       302      404    303      404    404         404   404      303
exposed connection      GET        302      403    403      403    403         403   403      200
exposed discover        POST       302      403    403      403    403         403   403      502
exposed client-token    POST       302      403    403      403    403         403   403      404
"""
OAUTH_ROWS = [
    Row(row.routing, f"authorizations:{row.name}", row.method, row.expected)
    for row in parse_matrix(OAUTH_MATRIX)
]


def oauth_url(world: World, row: Row, authorization_pk: int) -> str:
    conn = world.connections["group" if row.routing == "exposed" else "user"]
    pattern = next(p for p in patterns_of("authorizations") if row.name.endswith(f":{p.name}"))
    converters = pattern.pattern.converters
    if "pk" in converters:
        return reverse(row.name, kwargs={"pk": authorization_pk})
    if converters:
        (name,) = converters
        return reverse(row.name, kwargs={name: conn.name})
    return reverse(row.name)


@pytest.mark.parametrize("row", OAUTH_ROWS, ids=[r.id for r in OAUTH_ROWS])
def test_oauth_accounts_and_panel(world: World, row: Row) -> None:
    carls = Authorization.objects.create(
        connection=world.connections["group"],
        user=world.users["caller"],
        kind=Authorization.Kind.PERSON,
        issuer="http://127.0.0.1:9/",
        access_token="at-sekret-matrix",
    )
    url = oauth_url(world, row, carls.pk)

    def check(role: str) -> str:
        code = int(row.expected[role])
        before = (everything(), list(Authorization.objects.values_list("pk", "status")))
        response = send(world.client(role), row.method, url)
        if response.status_code != code:
            return f"expected {code}, got {response.status_code}"
        if code == 302 and not is_login_redirect(response):
            return f"redirected to {response['Location']}, not to sign in"
        after = (everything(), list(Authorization.objects.values_list("pk", "status")))
        if row.method == "POST" and code not in (200, 303) and after != before:
            return f"a refused POST ({code}) changed something"
        return ""

    each_role(world, "group", check)


# -- CSRF ------------------------------------------------------------------------------------


def post_endpoints(world: World) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """Every POST a person can make, with the role allowed to make it."""
    for name in ("calls:round", "calls:claim", "calls:release", "calls:retry"):
        yield name, url_for(world, name, "group"), "admin", POST_DATA.get(name, {})
    yield "calls:restart", url_for(world, "calls:restart", "group"), "caller", {}
    start = reverse("starting:start", kwargs={"connection": world.connections["group"].name})
    yield "starting:start", f"{start}?tool=approve_deploy", "caller", {"start": "1"}
    for namespace, role in GATED.items():
        for pattern in patterns_of(namespace):
            yield f"{namespace}:{pattern.name}", gated_url(world, namespace, pattern), role, {}
    group = world.connections["group"].name
    yield "authorizations:connect", reverse("authorizations:connect", args=[group]), "caller", {}
    for name in ("discover", "client-token"):
        url = reverse(f"authorizations:{name}", args=[group])
        yield f"authorizations:{name}", url, "operator", {}
    own, _ = Authorization.objects.get_or_create(
        connection=world.connections["group"],
        user=world.users["caller"],
        defaults={"kind": Authorization.Kind.PERSON, "issuer": "http://127.0.0.1:9/"},
    )
    url = reverse("authorizations:disconnect", args=[own.pk])
    yield "authorizations:disconnect", url, "caller", {}


def test_every_post_is_refused_without_a_csrf_token(world: World) -> None:
    world.round("user")
    for name, url, role, data in post_endpoints(world):
        client = world.client(role)
        before = everything()
        response = client.post(url, data)
        assert response.status_code == 403, name
        # The site's own CSRF failure page (templates/403_csrf.html), not a permission refusal.
        assert b"The form could not be sent" in response.content, name
        assert everything() == before, name


FORM = re.compile(r"<form\b[^>]*>.*?</form>", re.S | re.I)


def post_forms(html: str) -> list[str]:
    return [f for f in FORM.findall(html) if re.search(r'method="post"', f, re.I)]


def test_every_form_on_these_pages_carries_the_csrf_token(world: World) -> None:
    group_round = world.round("group")
    pages: list[tuple[str, str]] = [
        ("member", reverse("inbox:index")),  # Claim
        ("member", group_round.get_absolute_url()),  # Claim, answer
        ("caller", world.call("group").get_absolute_url()),
        ("caller", reverse("inbox:history")),
        ("admin", group_round.get_absolute_url()),  # Release, once claimed
    ]
    seen = 0
    for role, url in pages:
        if role == "admin":
            engine.claim(group_round, world.users["member"])
        html = world.client(role).get(url).content.decode()
        for form in post_forms(html):
            assert 'name="csrfmiddlewaretoken"' in form, (url, form[:200])
            seen += 1
    assert seen >= 5


# -- websockets: who may listen, and from which pages -----------------------------------------

# "open": accepted and listening; 4401/4403: accepted, then closed with that code (not signed
# in / may not see the call); "refused": refused at the handshake (HTTP 403 from a server),
# before the session is even read. A call's socket is open to exactly whom its page shows
# (test_the_call_socket_rows_agree_with_the_call_page). Every row runs with each origin in
# its column's set: "same" is the page's own origin (the Host, port included, as the sign-in
# form's CSRF check wants it); "foreign" is each of FOREIGN_ORIGINS.
WS_MATRIX = """
                         anonymous outsider caller assignee member after_claim admin operator
user  ws:call    same       4401     4403    open    open     4403     4403     open   4403
group ws:call    same       4401     4403    open    4403     open     4403     open   4403
user  ws:inbox   same       4401     open    open    open     open     open     open   open
user  ws:call    foreign   refused  refused refused refused  refused  refused  refused refused
group ws:call    foreign   refused  refused refused refused  refused  refused  refused refused
user  ws:inbox   foreign   refused  refused refused refused  refused  refused  refused refused
"""
WS_ROWS = parse_matrix(WS_MATRIX)
WS_HOST = "127.0.0.1:8000"
SAME_ORIGIN = f"http://{WS_HOST}"
FOREIGN_ORIGINS = (
    "http://127.0.0.1:9999",  # a page served from another port of the same host
    "http://127.0.0.1",  # the default port is another port too
    "https://127.0.0.1:8000",  # another scheme
    "http://localhost:8000",  # another name for the same machine
    "https://evil.example",  # another site
    "null",  # a sandboxed frame, a file: page
    "",  # no Origin header at all
)
WS_CASES = [
    (row, origin)
    for row in WS_ROWS
    for origin in ((SAME_ORIGIN,) if row.method == "same" else FOREIGN_ORIGINS)
]


def ws_path(world: World, row: Row) -> str:
    if row.name == "ws:inbox":
        return "/ws/inbox/"
    return f"/ws/calls/{world.call(row.routing).pk}/"


def session_cookie(client: Client) -> bytes:
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode() if name in client.cookies else b""


async def listens(cookie: bytes, path: str, origin: str) -> str:
    """What a socket opened at ``path`` with ``cookie`` from a page at ``origin`` gets, in the
    matrix's words."""
    from channels.testing.websocket import WebsocketCommunicator

    from mrtrweb.asgi import application

    headers = [(b"host", WS_HOST.encode())]
    if cookie:
        headers.append((b"cookie", cookie))
    if origin:
        headers.append((b"origin", origin.encode()))
    socket = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await socket.connect(timeout=5)
    if not connected:
        return "refused"
    try:
        if await socket.receive_nothing(timeout=0.1):
            return "open"
        output = await socket.receive_output(timeout=1)
        return str(output.get("code")) if output["type"] == "websocket.close" else str(output)
    finally:
        await socket.disconnect()


@pytest.fixture
def sockets_in_process(settings: Any) -> Iterator[None]:
    """The app's own in-memory channel layer, and no task worker started by the first socket."""
    from channels.layers import channel_layers

    from mrtrweb.live import events

    settings.MRTRWEB_INPROCESS_WORKER = False
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": IN_MEMORY_CHANNEL_LAYER}}
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()
    events.remember_web_loop(None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("sockets_in_process")
@pytest.mark.parametrize(
    ("row", "origin"),
    WS_CASES,
    ids=[f"{r.routing}-{r.name}-{origin or 'no-origin'}" for r, origin in WS_CASES],
)
async def test_websockets(world: World, row: Row, origin: str) -> None:
    from channels.db import database_sync_to_async

    path = await database_sync_to_async(ws_path)(world, row)
    problems = []
    # Committed, not rolled back: the consumer reads the database from its own connection.
    # Roles run in order, and the claim "after_claim" needs changes nothing for the others.
    for role in ROLES:
        await database_sync_to_async(world.prepare)(role, row.routing)
        cookie = await database_sync_to_async(lambda r=role: session_cookie(world.client(r)))()
        got = await listens(cookie, path, origin)
        if got != row.expected[role]:
            problems.append(f"{role}: expected {row.expected[role]}, got {got}")
    assert not problems, "\n".join(problems)


def test_the_call_socket_rows_agree_with_the_call_page() -> None:
    """Whoever may open the call's page may listen to it, and nobody else."""
    page = {r.routing: r.expected for r in ROWS if r.name == "calls:call"}
    as_socket = {"200": "open", "404": "4403", "302": "4401"}
    for row in WS_ROWS:
        if row.name == "ws:call" and row.method == "same":
            assert row.expected == {
                role: as_socket[cell] for role, cell in page[row.routing].items()
            }


# -- the matrix covers the URLconf -----------------------------------------------------------

# Pages outside this matrix on purpose: sign-in and password pages, the home page and the
# health check (public), Django's admin (its own permission system). The JSON API ("api":
# bearer tokens, no sessions) and a person's API token pages ("tokens") have their own access
# tests in tests/api/ (test_auth.py, test_calls.py, test_rounds.py, test_servers.py,
# test_token_pages.py). Two-step sign-in ("accounts": a person's own devices only) is tested in
# tests/accounts/; the account page ("account": a person's own settings, nobody else's) in
# tests/inbox/test_answering.py; the away page ("away": a person's own delegations, nobody
# else's) in tests/policies/test_delegation.py.
NOT_IN_MATRIX_NAMESPACES = ("admin", "core", "api", "tokens", "accounts", "account", "away")
NOT_IN_MATRIX_NAMES = frozenset(
    {
        "login",
        "logout",
        "password_change",
        "password_change_done",
        "password_reset",
        "password_reset_done",
        "password_reset_confirm",
        "password_reset_complete",
        # Single sign-on's two legs (tests/accounts/test_single_sign_on.py).
        "oidc_authentication_init",
        "oidc_authentication_callback",
    }
)


def url_names(patterns: list[Any], namespace: str = "") -> Iterator[str]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = pattern.namespace or namespace
            if namespace and pattern.namespace:
                inner = f"{namespace}:{pattern.namespace}"
            yield from url_names(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}:{pattern.name}" if namespace else pattern.name


def test_every_view_is_in_the_matrix() -> None:
    covered = {r.name for r in ROWS} | {"starting:pick", "starting:start"}
    covered |= {f"{ns}:{p.name}" for ns in GATED for p in patterns_of(ns)}
    covered |= {r.name for r in OAUTH_ROWS}
    missing = sorted(
        name
        for name in url_names(get_resolver().url_patterns)
        if name not in covered
        and name not in NOT_IN_MATRIX_NAMES
        and name.split(":")[0] not in NOT_IN_MATRIX_NAMESPACES
    )
    assert not missing, f"add these views to the access matrix: {missing}"


def test_the_matrix_has_every_view_for_both_routings() -> None:
    keys = [(r.routing, r.name, r.method) for r in ROWS]
    assert len(keys) == len(set(keys))
    for routing in ROUTINGS:
        names = {name for r, name, _ in keys if r == routing}
        assert names == {*ON_CALL, *ON_ROUND, *LISTS_ROUNDS, *LISTS_CALLS}
