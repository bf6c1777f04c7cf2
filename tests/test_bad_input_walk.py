"""Bad input, everywhere: every view's query parameters and form fields, and every operation
of the JSON API, get hostile values; none may answer 500 or log an error.

The pages are collected from the URLconf (as the access matrix collects them). Each view is
opened as a person who may use it (an admin; an operator for the operators' console), and the
names to spoil come from what the page itself offers, not from a list kept by hand: the
fields of its forms (POSTed back with one field spoiled at a time, the others as rendered),
the query strings of links that lead back to the same view, and the query names the view's
module reads (``request.GET.get("...")``). The API's operations come from its OpenAPI
document: path, query and body parameters, each spoiled in turn.

Hostile values: digits that are not ASCII (``int("²")`` raises though ``"²".isdigit()``
holds, and ``int("٣")`` is 3), numbers past any column, a date whose next day does not exist,
unknown ids, an empty value, a long one, a NUL byte. A value with digits in it (``cancel:12``)
is also sent with those digits spoiled. Every request runs in a savepoint rolled back after
it, so each starts from the same world.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.urls.exceptions import Resolver404
from django.utils import timezone

from mrtrweb.api.models import ApiToken
from mrtrweb.api.openapi import document
from mrtrweb.authorizations.models import Authorization
from mrtrweb.calls.models import Round
from mrtrweb.policies.models import Delegation
from mrtrweb.servers.catalog import ensure_catalog
from tests.api.support import Api
from tests.inbox.support import (
    APPROVERS,
    admin,
    answer_data,
    ask,
    browser,
    expose,
    operator,
    person,
    to_group,
    to_user,
)

pytestmark = pytest.mark.django_db

UNKNOWN_ID = "987654"
HUGE = "99999999999999999999"
HOSTILE = (
    "²",
    "³",
    "٣",  # Arabic-Indic three: int() takes it, a database column may not
    "-1",
    "0",
    HUGE,
    "9999-12-31",
    "abc",
    UNKNOWN_ID,
    "",
    "x" * 3000,
    "a\x00b",
)
# What the answered round and its call get: they read the same names as the pending ones, so
# only what names an option or an id is tried again there.
NUMERIC = ("²", "٣", HUGE, UNKNOWN_ID, "-1")
# What replaces the digits of a structured value ("cancel:12", "2026-01-05").
DIGIT_SWAPS = ("²", "٣", HUGE, UNKNOWN_ID)

# Views left out, and why: Django's admin has its own forms; signing out would end the
# walker's session; single sign-on's legs talk to an identity provider.
SKIPPED = frozenset({"logout", "oidc_authentication_init", "oidc_authentication_callback"})
SKIPPED_NAMESPACES = ("admin", "api")
# The operators' console is theirs; everything else is walked as an admin.
OPERATOR_VIEWS = ("servers:", "policies:", "authorizations:connection", "authorizations:discover")
OPERATOR_VIEWS += ("authorizations:client-token",)


# -- the world -------------------------------------------------------------------------------


@dataclass
class World:
    users: dict[str, Any]
    ids: dict[str, int]
    connection: str
    token: str


@pytest.fixture
def world(fastmcp_peer: Any) -> World:
    users = {
        "admin": admin("alice"),
        "operator": operator("otto"),
        "caller": person("carl"),
        "member": person("ada", APPROVERS),
    }
    to_alice = to_user(fastmcp_peer, users["admin"])
    group_conn = expose(to_group(fastmcp_peer, APPROVERS), "approve_deploy", "echo")
    for conn in (to_alice, group_conn):
        ensure_catalog(conn)
    pending = ask(group_conn, users["caller"])
    answered = ask(to_alice, users["caller"])
    page = browser(users["admin"])
    response = page.post(answered.get_absolute_url(), answer_data())
    assert response.status_code == 303, response.content[:500]
    answered.refresh_from_db()
    assert answered.status != Round.Status.PENDING
    authorization = Authorization.objects.create(
        connection=group_conn,
        user=users["admin"],
        kind=Authorization.Kind.PERSON,
        issuer="http://127.0.0.1:9/",
        access_token="at-walker",
    )
    token, plain = ApiToken.issue(users["admin"], "walker")
    away = Delegation.objects.create(
        person=users["admin"],
        delegate=users["member"],
        until=timezone.now() + timezone.timedelta(days=3),
    )
    ids = {
        "call": pending.call_id,
        "round": pending.pk,
        "answered_round": answered.pk,
        "answered_call": answered.call_id,
        "person": users["member"].pk,
        "group": group_conn.route_group_id,
        "authorization": authorization.pk,
        "token": token.pk,
        "delegation": away.pk,
    }
    return World(users, ids, group_conn.name, plain)


# Which object a view's number names; anything else numbered is a call.
NUMBERED = {
    "calls:round": "round",
    "calls:retry": "round",
    "calls:claim": "round",
    "calls:release": "round",
    "dashboard:person": "person",
    "dashboard:person_active": "person",
    "dashboard:person_link": "person",
    "dashboard:group": "group",
    "authorizations:disconnect": "authorization",
    "tokens:revoke": "token",
    "tokens:secret": "token",
    "away:end": "delegation",
}


def url_names(patterns: list[Any], namespace: str = "") -> Iterator[tuple[str, URLPattern]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = pattern.namespace or namespace
            yield from url_names(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield (f"{namespace}:{pattern.name}" if namespace else pattern.name), pattern


def walked_views() -> list[tuple[str, URLPattern]]:
    seen: dict[str, URLPattern] = {}
    for name, pattern in url_names(get_resolver().url_patterns):
        if name in SKIPPED or name.split(":")[0] in SKIPPED_NAMESPACES:
            continue
        seen.setdefault(name, pattern)  # a name served twice (sign-in) is one view
    return sorted(seen.items())


def urls_for(world: World, name: str, pattern: URLPattern) -> list[str]:
    """The view's address with real objects, and, for a view about a round or a call, the
    same view on the answered round and its call."""
    converters = pattern.pattern.converters
    if not converters:
        return [reverse(name)]
    kwargs: dict[str, Any] = {}
    answered: dict[str, Any] = {}
    for key, converter in converters.items():
        kind = type(converter).__name__
        if kind == "IntConverter":
            which = NUMBERED.get(name, "call")
            kwargs[key] = world.ids[which]
            if which in ("round", "call"):
                answered[key] = world.ids[f"answered_{which}"]
        elif kind == "SlugConverter":
            kwargs[key] = world.connection
        else:  # the password reset link's parts: a link that does not exist
            kwargs[key] = "MQ" if key == "uidb64" else "set-password"
    urls = [reverse(name, kwargs=kwargs)]
    if answered:
        urls.append(reverse(name, kwargs={**kwargs, **answered}))
    return urls


def role_for(name: str) -> str:
    return "operator" if name.startswith(OPERATOR_VIEWS) else "admin"


# -- what a page offers ----------------------------------------------------------------------


@dataclass
class Form:
    method: str
    action: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    buttons: list[tuple[str, str]] = field(default_factory=list)


class Offers(HTMLParser):
    """A page's forms (the values a browser would send) and the query strings of its links."""

    def __init__(self, url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.url = url
        self.forms: list[Form] = []
        self.links: list[str] = []
        self._form: Form | None = None
        self._select: tuple[str, list[tuple[str, bool]]] | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag == "form":
            self._form = Form(a.get("method", "get").upper(), a.get("action") or self.url)
            self.forms.append(self._form)
        elif self._form is None or not a.get("name"):
            return
        elif tag == "input":
            kind = a.get("type", "text").lower()
            if kind in ("submit", "image"):
                self._form.buttons.append((a["name"], a.get("value", "")))
            elif kind in ("checkbox", "radio"):
                if "checked" in a:
                    self._form.fields.append((a["name"], a.get("value", "on")))
                else:  # named, so spoilable, though a browser would not send it now
                    self._form.buttons.append((a["name"], a.get("value", "on")))
            elif kind != "file":
                self._form.fields.append((a["name"], a.get("value", "")))
        elif tag == "button" and a.get("type", "submit") == "submit":
            self._form.buttons.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self._select = (a["name"], [])
        elif tag == "option" and self._select is not None:
            self._select[1].append((a.get("value", ""), "selected" in a))
        elif tag == "textarea":
            self._textarea = a["name"]
            self._form.fields.append((a["name"], ""))

    def handle_data(self, data: str) -> None:
        if self._textarea and self._form is not None:
            name, value = self._form.fields.pop()
            self._form.fields.append((name, value + data))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "textarea":
            self._textarea = None
        elif tag == "select" and self._select is not None and self._form is not None:
            name, options = self._select
            chosen = [v for v, selected in options if selected] or [v for v, _ in options[:1]]
            self._form.fields.extend((name, v) for v in chosen)
            self._select = None


def view_of(url: str) -> str | None:
    try:
        match = resolve(urlsplit(url).path)
    except Resolver404:
        return None
    return match.view_name


GET_NAMES = re.compile(r"""\bGET(?:\.get|\.getlist|\[|\.__contains__)\(?\s*["']([\w-]+)["']""")


def names_read_by(pattern: URLPattern) -> set[str]:
    """The query names the view's own module reads."""
    module = sys.modules.get(getattr(pattern.callback, "__module__", ""), None)
    if module is None:
        return set()
    try:
        return set(GET_NAMES.findall(inspect.getsource(module)))
    except (OSError, TypeError):
        return set()


def spoiled(value: str, values: tuple[str, ...]) -> Iterator[str]:
    yield from values
    if re.search(r"\d", value):
        for swap in DIGIT_SWAPS:
            yield re.sub(r"\d+", swap, value)


# -- walking ---------------------------------------------------------------------------------


@dataclass
class Walk:
    requests: int = 0
    views: set[str] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)


def attempt(walk: Walk, view: str, caplog: Any, send: Any, what: str) -> None:
    """One hostile request, undone after; a 500 or a logged error is a failure."""
    caplog.clear()
    walk.requests += 1
    walk.views.add(view)
    with transaction.atomic():
        try:
            response = send()
            code = response.status_code
        finally:
            transaction.set_rollback(True)
    # A server's error answers the designed way (502: the MCP server failed; 503: the
    # database was busy) are logged by Django at ERROR too; anything else logged is a fault.
    errors = [
        r
        for r in caplog.records
        if r.levelno >= logging.ERROR and not (r.name == "django.request" and code in (502, 503))
    ]
    if (code >= 500 and code not in (502, 503)) or errors:
        logged = errors[0].getMessage().splitlines()[0][:160] if errors else ""
        walk.failures.append(f"{view} {what}: {code} {logged}")
    elif code >= 400 and code != 405 and not response.content.strip():
        walk.failures.append(f"{view} {what}: {code} without a message")


def form_data(fields: list[tuple[str, str]]) -> dict[str, list[str]]:
    data: dict[str, list[str]] = {}
    for name, value in fields:
        data.setdefault(name, []).append(value)
    return data


def walk_form(
    walk: Walk,
    view: str,
    client: Client,
    form: Form,
    caplog: Any,
    values: tuple[str, ...] = HOSTILE,
) -> None:
    """The form sent back with one field spoiled at a time, the others as the page had them."""
    base = form_data([*form.fields, *form.buttons[:1]])
    offered = [*form.fields, *form.buttons]
    for name in sorted({n for n, _ in offered} - {"csrfmiddlewaretoken"}):
        original = next(v for n, v in offered if n == name)
        for value in dict.fromkeys(spoiled(original, values)):
            data = {**base, name: [value]}
            attempt(
                walk,
                view,
                caplog,
                lambda d=data: client.post(form.action, d),
                f"POST {form.action} {name}={value[:20]!r}",
            )


def walk_query(
    walk: Walk,
    view: str,
    client: Client,
    url: str,
    names: set[str],
    caplog: Any,
    values: tuple[str, ...] = HOSTILE,
) -> None:
    """Each name the view is known to read, spoiled alone; then every name the site reads
    anywhere, all spoiled at once."""
    path = urlsplit(url).path
    for name in sorted(names - NOT_SPOILED.get(view, set())):
        for value in values:
            attempt(
                walk,
                view,
                caplog,
                lambda n=name, v=value: client.get(path, {n: v}),
                f"GET {path}?{name}={value[:20]!r}",
            )
    everywhere = sorted(QUERY_NAMES - NOT_SPOILED.get(view, set()))
    for value in values:
        attempt(
            walk,
            view,
            caplog,
            lambda v=value: client.get(path, dict.fromkeys(everywhere, v)),
            f"GET {path}?<every name>={value[:20]!r}",
        )


# Names read where a static look cannot see them (a QueryDict handed on whole: the OAuth
# callback's, the start page's choice of tool, prompt or resource, the dashboard's filters;
# the fields of pages only a POST shows, such as the bulk actions' confirmation), besides
# those each view's own module reads and its pages offer.
QUERY_NAMES = frozenset(
    {
        "page", "q", "next", "answered", "started", "mine", "status", "sort", "order",
        "restore", "json", "tool", "prompt", "resource", "template", "code", "state",
        "error", "connection", "user", "group", "assigned", "since", "until", "from", "to",
        "action", "confirmed", "one", "rounds", "remove", "delegate", "held", "hold",
    }
)  # fmt: skip
# ``hold`` makes the live view wait for the call to move, up to 15 s: its job, not a fault.
NOT_SPOILED = {"live:next": {"hold"}}


@dataclass
class Pages:
    """What the walker saw: each view's addresses, the forms that post to each view (from any
    page), and the query names links and GET forms use for each view."""

    urls: dict[str, list[str]] = field(default_factory=dict)
    forms: dict[str, dict[tuple[str, ...], Form]] = field(default_factory=dict)
    names: dict[str, set[str]] = field(default_factory=dict)
    # One link a view and set of query names, to a page the view shows only when asked (a
    # tool's start form, a tool's policy): its forms are walked too.
    asked: dict[tuple[str, frozenset[str]], str] = field(default_factory=dict)

    def read(self, url: str, html: str) -> None:
        offers = Offers(url)
        offers.feed(html)
        for link in offers.links:
            target = view_of(link)
            if target:
                query = parse_qsl(urlsplit(link).query, keep_blank_values=True)
                self.names.setdefault(target, set()).update(k for k, _ in query)
                if query and target in self.urls:
                    self.asked.setdefault((target, frozenset(k for k, _ in query)), link)
        for form in offers.forms:
            target = view_of(form.action)
            if target is None:
                continue
            if form.method == "GET":
                fields = [*form.fields, *form.buttons]
                self.names.setdefault(target, set()).update(n for n, _ in fields)
                continue
            key = tuple(sorted({n for n, _ in [*form.fields, *form.buttons]}))
            self.forms.setdefault(target, {}).setdefault(key, form)


def test_no_page_answers_bad_input_with_a_500(world: World, caplog: Any) -> None:
    caplog.set_level(logging.ERROR)
    walk, pages = Walk(), Pages()
    clients = {role: browser(user) for role, user in world.users.items()}
    for client in clients.values():
        client.raise_request_exception = False
    views = walked_views()
    answers_get: set[str] = set()
    for view, pattern in views:
        pages.urls[view] = urls_for(world, view, pattern)
        for url in pages.urls[view]:
            with transaction.atomic():
                page = clients[role_for(view)].get(url)
                transaction.set_rollback(True)
            if page.status_code != 405:  # a view that only takes POSTs reads no query
                answers_get.add(view)
            if page.status_code == 200 and "html" in page.get("Content-Type", ""):
                pages.read(url, page.content.decode())
    for (view, _names), link in list(pages.asked.items()):
        with transaction.atomic():
            page = clients[role_for(view)].get(link)
            transaction.set_rollback(True)
        if page.status_code == 200 and "html" in page.get("Content-Type", ""):
            pages.read(link, page.content.decode())
    for view, pattern in views:
        client = clients[role_for(view)]
        for n, url in enumerate(pages.urls[view]):
            values = NUMERIC if n else HOSTILE
            if view in answers_get:
                names = names_read_by(pattern) | pages.names.get(view, set())
                walk_query(walk, view, client, url, names, caplog, values)
            else:  # a POST with every name the site reads, all spoiled at once
                for value in values:
                    data = dict.fromkeys(QUERY_NAMES, value)
                    what = f"POST {url} <every name>={value[:20]!r}"
                    attempt(walk, view, caplog, lambda u=url, d=data, c=client: c.post(u, d), what)
        for form in pages.forms.get(view, {}).values():
            walk_form(walk, view, client, form, caplog)
            # The same form sent to the answered round (or its call), where it no longer
            # belongs.
            for url in pages.urls[view][1:]:
                if urlsplit(form.action).path != url:
                    there = Form("POST", url, form.fields, form.buttons)
                    walk_form(walk, view, client, there, caplog, NUMERIC)
    print(f"pages: {walk.requests} requests over {len(walk.views)} views")
    assert len(walk.views) == len(views)
    assert not walk.failures, f"{len(walk.failures)} of {walk.requests}:\n" + "\n".join(
        walk.failures
    )


def test_what_was_found_answers_with_a_message(world: World) -> None:
    """The walker's first finds, each with the answer a person reads."""
    from tests.inbox.support import text as page_text

    web = browser(world.users["admin"])
    for url in ("/inbox/?page=²", "/inbox/history/?answered=²", "/inbox/history/?started=³"):
        assert web.get(url).status_code == 200, url  # the first page, as for any junk
    assert web.get("/dashboard/calls/?q=²").status_code == 200

    away = web.post(reverse("away:away"), {"delegate": "ada", "until": "9999-12-31"})
    assert away.status_code == 200
    assert "Pick a day within a year." in page_text(away)

    group = reverse("dashboard:group", args=[world.ids["group"]])
    removed = web.post(group, {"remove": "²"})
    assert removed.status_code == 404
    assert "has no such member" in page_text(removed)

    bulk = web.post(reverse("dashboard:bulk"), {"one": "cancel:²"}, follow=True)
    assert "Tick at least one round." in page_text(bulk)
    assert Round.objects.get(pk=world.ids["round"]).status == Round.Status.PENDING

    person = reverse("dashboard:person", args=[world.ids["person"]])
    grouped = web.post(person, {"email": "", "groups": [HUGE]})
    assert grouped.status_code == 200
    assert "is not a valid value" in page_text(grouped)

    # A NUL names no tool and matches nobody (PostgreSQL refuses to compare with one).
    policy = reverse("policies:policy", args=[world.connection])
    operator_web = browser(world.users["operator"])
    for method in (operator_web.get, operator_web.post):
        refused = method(policy, {"tool": "a\x00b"})
        assert refused.status_code == 404
        assert "This server does not offer that tool." in page_text(refused)
    exposure = reverse("servers:exposure", args=[world.connection])
    refused = operator_web.post(exposure, {"tool": "a\x00b", "exposed": "on"})
    assert refused.status_code == 404
    searched = web.get(reverse("dashboard:people"), {"q": "a\x00b"})
    assert searched.status_code == 200
    assert "alice" not in re.sub(r"<header.*?</header>", "", page_text(searched), flags=re.S)

    answered = Round.objects.get(pk=world.ids["answered_round"])
    data = {
        **answer_data(),
        **{k: ["²"] for k in answer_data() if k.endswith(("notify", "window"))},
    }
    again = web.post(answered.get_absolute_url(), data)
    assert again.status_code == 409, again.status_code
    assert "already" in page_text(again)


# -- the JSON API ----------------------------------------------------------------------------

# JSON numbers besides the hostile strings. Not infinite ones: a body's non-finite numbers
# are refused on their own (tests/api/test_malformed.py).
HOSTILE_NUMBERS = (-1, 10**20)


def api_bodies(world: World) -> dict[str, Any]:
    """A body each operation would accept, to spoil one value of at a time."""
    return {
        "StartCall": {
            "server": world.connection,
            "name": "approve_deploy",
            "arguments": {"service": "api"},
            "policy": {"approvalsRequired": 1, "approversGroup": APPROVERS},
        },
        "SubmitResponses": {
            "responses": {"approval": {"action": "accept", "content": dict(API_APPROVAL)}},
            "comment": "ok",
        },
        "CreateServer": {"name": "walked", "url": "http://127.0.0.1:9/mcp"},
        "UpdateServer": {"title": "Walked"},
    }


def leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from leaves(inner, (*path, key))
    elif path:
        yield path


def with_value(body: Any, path: tuple[str, ...], value: Any) -> Any:
    copy = json.loads(json.dumps(body))
    inner = copy
    for key in path[:-1]:
        inner = inner.setdefault(key, {})
    inner[path[-1]] = value
    return copy


def body_paths(schemas: dict[str, Any], name: str, base: dict[str, Any]) -> list[tuple[str, ...]]:
    """The base body's values, and every property the schema (and the schemas it names) has."""
    paths = dict.fromkeys(leaves(base))

    def walk(schema_name: str, prefix: tuple[str, ...]) -> None:
        for prop, spec in schemas[schema_name].get("properties", {}).items():
            paths.setdefault((*prefix, prop))
            for ref in [spec.get("$ref"), *(a.get("$ref") for a in spec.get("anyOf", []))]:
                if ref and len(prefix) < 2:
                    walk(ref.rsplit("/", 1)[-1], (*prefix, prop))

    walk(name, ())
    return list(paths)


def api_values() -> Iterator[Any]:
    yield from HOSTILE
    yield from HOSTILE_NUMBERS


API_APPROVAL = {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops"]}


@dataclass
class Operation:
    """One operation of the API, sent with the values its parameters and body would take."""

    api: Api
    method: str
    path: str
    params: list[dict[str, Any]]
    body: Any
    body_paths: list[tuple[str, ...]]
    path_values: dict[str, str]

    @property
    def name(self) -> str:
        return f"{self.method.upper()} {self.path}"

    def send(
        self,
        path_values: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        url = "/api/v1" + self.path.format(**(path_values or self.path_values))
        auth = {"Authorization": f"Bearer {self.api.token}", **(headers or {})}
        if self.method == "get":
            return self.api.client.get(url, query or {}, headers=auth)
        data = json.dumps(body if body is not None else self.body or {})
        send = getattr(self.api.client, self.method)
        return send(url, data, content_type="application/json", headers=auth)


def walk_operation(walk: Walk, op: Operation, caplog: Any) -> None:
    for p in op.params:
        where, name = p["in"], p["name"]
        for value in HOSTILE:
            what = f"{where} {name}={value[:20]!r}"
            if where == "path":
                spoilt = {**op.path_values, name: value}
                attempt(walk, op.name, caplog, lambda s=spoilt: op.send(s), what)
            elif where == "query":
                attempt(walk, op.name, caplog, lambda q={name: value}: op.send(query=q), what)
            elif where == "header" and "\x00" not in value:  # no client can send a NUL
                attempt(walk, op.name, caplog, lambda h={name: value}: op.send(headers=h), what)
    for where in op.body_paths:
        for value in api_values():
            spoilt = with_value(op.body, where, value)
            what = f"body {'.'.join(where)}={str(value)[:20]!r}"
            attempt(walk, op.name, caplog, lambda b=spoilt: op.send(body=b), what)
    for value in NUMERIC:  # query names the operation does not take, all at once
        query = dict.fromkeys(QUERY_NAMES | {"limit", "wait"}, value)
        what = f"query <every name>={value[:20]!r}"
        attempt(walk, op.name, caplog, lambda q=query: op.send(query=q), what)


def test_no_api_operation_answers_bad_input_with_a_500(world: World, caplog: Any) -> None:
    caplog.set_level(logging.ERROR)
    doc = document()
    schemas = doc["components"]["schemas"]
    bodies = api_bodies(world)
    tokens = {"admin": world.token, "operator": ApiToken.issue(world.users["operator"], "w")[1]}
    real = {
        "/servers/{name}": world.connection,
        "/calls/{id}": str(world.ids["call"]),
        "/rounds/{id}": str(world.ids["round"]),
    }
    walk = Walk()
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            api = Api(tokens["operator" if path.startswith("/servers") else "admin"])
            api.client.raise_request_exception = False
            params = operation.get("parameters", [])
            real_value = next((v for k, v in real.items() if path.startswith(k)), "")
            path_values = {p["name"]: real_value for p in params if p["in"] == "path"}
            schema = operation.get("requestBody", {}).get("content", {}).get("application/json")
            body_name = schema["schema"]["$ref"].rsplit("/", 1)[-1] if schema else None
            body = bodies[body_name] if body_name else None
            paths = body_paths(schemas, body_name, body) if body_name else []
            op = Operation(api, method, path, params, body, paths, path_values)
            walk_operation(walk, op, caplog)
    print(f"API: {walk.requests} requests over {len(walk.views)} operations")
    assert len(walk.views) == sum(len(ops) for ops in doc["paths"].values())
    assert not walk.failures, f"{len(walk.failures)} of {walk.requests}:\n" + "\n".join(
        walk.failures
    )
