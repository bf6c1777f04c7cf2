"""Turning what a server sent (results, content blocks, resource contents) into safe views.

Nothing here marks anything safe: the templates escape every string. What this module
decides is which server values may become an ``href`` or a ``src`` at all:

- images and audio only as ``data:`` URIs of an allow-listed MIME type, rebuilt from the
  decoded bytes (so nothing but canonical base64 follows the comma); never SVG, never a
  remote URL (a remote ``src`` would tell a server who looked, and when);
- links only for ``http``/``https`` URIs with a host and no characters that browsers
  read differently from us; every other URI is shown as text.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from mrtrweb.servers.models import Connection

ALLOWED_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
ALLOWED_AUDIO_TYPES = frozenset({"audio/mpeg", "audio/wav", "audio/ogg"})
# A page with a bigger inline media element is slow for everyone; show its size instead.
MAX_INLINE_MEDIA_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Block:
    """One content block, ready for the template ``calls/_block.html``.

    ``kind`` is text, image, audio, media_refused, resource_link, resource_text,
    resource_blob or unknown.
    """

    kind: str
    text: str = ""
    mime: str = ""
    src: str = ""  # a checked data: URI, for image and audio only
    uri: str = ""
    href: str = ""  # a checked http(s) URL, or ""
    name: str = ""
    title: str = ""
    description: str = ""
    size: int | None = None
    reason: str = ""
    raw: str = ""  # pretty JSON of a block we do not know


@dataclass(frozen=True)
class Message:
    role: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Field:
    """One entry of a tool's structured content, as a row of a labelled table."""

    label: str
    value: str
    nested: bool = False  # the value is JSON (an object or a list of objects)


@dataclass(frozen=True)
class ResultView:
    """What the call page shows as the final result of ``tools/call``, ``prompts/get`` or
    ``resources/read``."""

    kind: str  # tool, prompt, resource
    is_error: bool = False
    blocks: tuple[Block, ...] = ()
    structured: str = ""  # pretty JSON, "" when absent
    fields: tuple[Field, ...] = ()  # the structured content as a table, when an object
    description: str = ""
    messages: tuple[Message, ...] = ()
    contents: tuple[Block, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


def base_mime(mime: Any) -> str:
    """``Image/PNG; charset=x`` -> ``image/png``; "" for anything that is not a string."""
    if not isinstance(mime, str):
        return ""
    return mime.split(";", 1)[0].strip().lower()


def media_src(mime: Any, data: Any, allowed: frozenset[str]) -> tuple[str, str]:
    """``(data URI, "")`` for allowed, well-formed media, else ``("", why it is not shown)``."""
    kind = base_mime(mime)
    if kind not in allowed:
        return "", f"{kind or 'untyped'} content is not shown inline"
    if not isinstance(data, str):
        return "", "the data is missing"
    try:
        raw = base64.b64decode(data.strip(), validate=True)
    except (binascii.Error, ValueError):
        return "", "the data is not valid base64"
    if not raw:
        return "", "the data is empty"
    if len(raw) > MAX_INLINE_MEDIA_BYTES:
        return "", f"too large to show inline ({len(raw)} bytes)"
    return f"data:{kind};base64,{base64.b64encode(raw).decode('ascii')}", ""


def http_href(uri: Any) -> str:
    """``uri`` if it is safe to offer as a link (http/https with a host), else ""."""
    if not isinstance(uri, str) or not uri:
        return ""
    # Browsers drop or reinterpret these; a link must lead where the text says.
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F or ch == "\\" for ch in uri):
        return ""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return ""
    if not uri.lower().startswith(("http://", "https://")):
        return ""
    return uri


def blob_size(blob: Any) -> int | None:
    """Decoded size of base64 ``blob``, without decoding it; None if it is not base64."""
    if not isinstance(blob, str):
        return None
    text = blob.strip()
    if len(text) % 4:
        return None
    padding = len(text) - len(text.rstrip("="))
    return len(text) // 4 * 3 - padding


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _size(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def resource_contents(raw: Any) -> Block:
    """A ``TextResourceContents`` or ``BlobResourceContents`` (embedded or read)."""
    if not isinstance(raw, Mapping):
        return Block(kind="unknown", raw=pretty_json(raw))
    uri = _text(raw.get("uri"))
    mime = _text(raw.get("mimeType"))
    if isinstance(raw.get("text"), str):
        return Block(kind="resource_text", text=raw["text"], uri=uri, mime=mime)
    if "blob" in raw:
        return Block(kind="resource_blob", uri=uri, mime=mime, size=blob_size(raw["blob"]))
    return Block(kind="unknown", raw=pretty_json(raw))


def content_block(raw: Any) -> Block:
    """One content block of a tool result or a prompt message."""
    if not isinstance(raw, Mapping):
        return Block(kind="unknown", raw=pretty_json(raw))
    kind = raw.get("type")
    if kind == "text":
        return Block(kind="text", text=_text(raw.get("text")))
    if kind in ("image", "audio"):
        allowed = ALLOWED_IMAGE_TYPES if kind == "image" else ALLOWED_AUDIO_TYPES
        mime = _text(raw.get("mimeType"))
        src, reason = media_src(mime, raw.get("data"), allowed)
        if not src:
            return Block(
                kind="media_refused",
                mime=mime,
                size=blob_size(raw.get("data")),
                reason=reason,
                name=kind,
            )
        return Block(kind=kind, mime=base_mime(mime), src=src)
    if kind == "resource_link":
        uri = _text(raw.get("uri"))
        return Block(
            kind="resource_link",
            uri=uri,
            href=http_href(uri),
            name=_text(raw.get("name")),
            title=_text(raw.get("title")),
            description=_text(raw.get("description")),
            mime=_text(raw.get("mimeType")),
            size=_size(raw.get("size")),
        )
    if kind == "resource":
        return resource_contents(raw.get("resource"))
    return Block(kind="unknown", name=_text(kind), raw=pretty_json(raw))


def content_blocks(raw: Any) -> tuple[Block, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(content_block(item) for item in raw)


def result_view(method: str, result: Any) -> ResultView | None:
    """The view of a call's stored result (``Call.result``), by the call's method."""
    if not isinstance(result, Mapping):
        return None
    if method == "tools/call":
        structured = result.get("structuredContent")
        return ResultView(
            kind="tool",
            is_error=result.get("isError") is True,
            blocks=content_blocks(result.get("content")),
            structured="" if structured is None else pretty_json(structured),
            fields=structured_fields(structured),
        )
    if method == "prompts/get":
        messages = []
        for message in result.get("messages") or []:
            if not isinstance(message, Mapping):
                continue
            content = message.get("content")
            blocks = content_blocks(content if isinstance(content, list) else [content])
            messages.append(Message(role=_text(message.get("role")) or "?", blocks=blocks))
        return ResultView(
            kind="prompt", description=_text(result.get("description")), messages=tuple(messages)
        )
    contents = result.get("contents")
    return ResultView(
        kind="resource",
        contents=tuple(resource_contents(c) for c in contents if c is not None)
        if isinstance(contents, list)
        else (),
    )


def answer_value(value: Any) -> str:
    """A typed answer as a person reads it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(answer_value(item) for item in value) or "(none)"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _label(key: str) -> str:
    """``canary_percent`` -> ``Canary percent``: a key as a table's label."""
    words = key.replace("_", " ").strip()
    return words[:1].upper() + words[1:] if words else "(no name)"


def structured_fields(structured: Any) -> tuple[Field, ...]:
    """A tool's ``structuredContent`` as the rows of a labelled table, when it is an object:
    scalars and lists of scalars read as words; anything nested stays JSON (shown as such)."""
    if not isinstance(structured, Mapping):
        return ()
    rows = []
    for key, value in structured.items():
        flat = value is None or isinstance(value, str | int | float | bool)
        if isinstance(value, list) and all(
            isinstance(item, str | int | float | bool) for item in value
        ):
            flat = True
        if value is None:
            rows.append(Field(label=_label(str(key)), value="(none)"))
        elif flat:
            rows.append(Field(label=_label(str(key)), value=answer_value(value)))
        else:
            rows.append(Field(label=_label(str(key)), value=pretty_json(value), nested=True))
    return tuple(rows)


def server_name(conn: Connection) -> str:
    """The name the server gave of itself (``serverInfo``), "" when it gave none."""
    return str((conn.server_info().get("info") or {}).get("name", ""))
