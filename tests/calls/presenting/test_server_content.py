"""What a server's content may become on a page: allow-listed data URIs, safe links, escaping."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from django.template import Context, Template
from hypothesis import given
from hypothesis import strategies as st

from mrtrweb.calls.presenting.server_content import (
    MAX_INLINE_MEDIA_BYTES,
    answer_value,
    blob_size,
    content_block,
    http_href,
    media_src,
    result_view,
)
from tests.elicitation.support import elements

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
EVIL = '<script>alert("x")</script>'


def render(raw: Any) -> str:
    template = Template("{% load calls_tags %}{% content_block block %}")
    return template.render(Context({"block": content_block(raw)}))


def tags(html: str, name: str) -> list[Any]:
    return [el for el in elements(html) if el.tag == name]


# -- media ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mime", ["image/png", "image/jpeg", "image/gif", "image/webp"])
def test_allowed_images_become_data_uris(mime: str):
    src, why = media_src(mime, PNG, frozenset({mime}))
    assert (src, why) == (f"data:{mime};base64,{PNG}", "")
    (img,) = tags(render({"type": "image", "mimeType": mime, "data": PNG}), "img")
    assert img.attrs["src"] == f"data:{mime};base64,{PNG}"
    assert img.attrs["alt"]


@pytest.mark.parametrize("mime", ["audio/mpeg", "audio/wav", "audio/ogg"])
def test_allowed_audio_becomes_a_player(mime: str):
    (audio,) = tags(render({"type": "audio", "mimeType": mime, "data": PNG}), "audio")
    assert audio.attrs["src"].startswith(f"data:{mime};base64,")
    assert "controls" in audio.attrs


@pytest.mark.parametrize(
    ("kind", "mime", "data"),
    [
        ("image", "image/svg+xml", base64.b64encode(b"<svg onload=alert(1)/>").decode()),
        ("image", "text/html", PNG),
        ("image", "", PNG),
        ("image", "image/png", "https://tracker.example/pixel.png"),
        ("image", "image/png", "javascript:alert(1)"),
        ("image", "image/png", PNG + '"><script>'),
        ("image", "image/png", ""),
        ("image", "audio/mpeg", PNG),  # audio type in an image block
        ("audio", "audio/webm", PNG),
        ("audio", "image/png", PNG),
    ],
)
def test_other_media_is_never_put_in_a_src(kind: str, mime: str, data: str):
    html = render({"type": kind, "mimeType": mime, "data": data})
    assert not tags(html, "img") and not tags(html, "audio")
    assert "src=" not in html
    assert "not shown" in html
    assert "<script>" not in html and "<svg" not in html


def test_a_mime_type_is_normalised_before_the_allow_list():
    src, _ = media_src("Image/PNG; charset=binary", PNG, frozenset({"image/png"}))
    assert src == f"data:image/png;base64,{PNG}"


def test_the_data_uri_is_rebuilt_from_the_decoded_bytes():
    # Trailing whitespace is dropped; the bytes go out in canonical base64.
    src, _ = media_src("image/png", f"  {PNG}\n", frozenset({"image/png"}))
    assert src == f"data:image/png;base64,{PNG}"


def test_huge_media_is_described_not_inlined():
    data = base64.b64encode(b"\x00" * (MAX_INLINE_MEDIA_BYTES + 1)).decode()
    block = content_block({"type": "image", "mimeType": "image/png", "data": data})
    assert block.kind == "media_refused"
    assert block.size == MAX_INLINE_MEDIA_BYTES + 1
    assert "too large" in block.reason


@given(st.text(max_size=60), st.text(max_size=60))
def test_no_mime_or_data_ever_yields_a_non_allowed_src(mime: str, data: str):
    allowed = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
    src, _ = media_src(mime, data, allowed)
    if src:
        head, _, body = src.partition(";base64,")
        assert head.removeprefix("data:") in allowed
        assert base64.b64encode(base64.b64decode(body, validate=True)).decode() == body


# -- links ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri", ["https://example.com/a?b=c", "http://127.0.0.1:8000/x", "HTTPS://Example.com"]
)
def test_http_links_are_offered(uri: str):
    assert http_href(uri) == uri


@pytest.mark.parametrize(
    "uri",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "peer://vault/secret",
        "vbscript:msgbox",
        " https://example.com",
        "https://exa mple.com",
        "https://example.com\\@evil.test",
        "https:\tevil.test",
        "http:///no-host",
        "//example.com/x",
        "https://[::1",
        "",
    ],
)
def test_other_uris_are_text_only(uri: str):
    assert http_href(uri) == ""
    html = render({"type": "resource_link", "uri": uri, "name": "thing"})
    assert not tags(html, "a")
    assert "thing" in html


def test_a_web_resource_link_is_a_link_that_leaks_nothing():
    html = render(
        {"type": "resource_link", "uri": "https://example.com/r", "name": "R", "title": EVIL}
    )
    (link,) = tags(html, "a")
    assert link.attrs["href"] == "https://example.com/r"
    assert set(link.attrs["rel"].split()) == {"noopener", "noreferrer", "nofollow"}
    assert EVIL not in html and "&lt;script&gt;" in html


# -- text and resources -----------------------------------------------------------------------


def test_text_is_escaped_and_kept_verbatim():
    html = render({"type": "text", "text": f"line 1\n{EVIL}"})
    # Text reads in normal type (its line breaks kept by the stylesheet), not as code.
    assert tags(html, "pre") == []
    (shown,) = [div for div in tags(html, "div") if "prose" in div.attrs.get("class", "")]
    assert shown.text == f"line 1\n{EVIL}"
    assert EVIL not in html


def test_embedded_resources_show_text_or_blob_size():
    text = render(
        {"type": "resource", "resource": {"uri": "peer://a", "mimeType": "text/x", "text": EVIL}}
    )
    assert tags(text, "pre")[0].text == EVIL
    assert EVIL not in text
    blob = content_block(
        {"type": "resource", "resource": {"uri": "peer://b", "mimeType": "image/png", "blob": PNG}}
    )
    assert (blob.kind, blob.size, blob.mime) == ("resource_blob", 24, "image/png")
    html = render({"type": "resource", "resource": {"uri": "peer://b", "blob": PNG}})
    assert "24 bytes" in html and not tags(html, "img")


def test_unknown_blocks_are_shown_as_escaped_json():
    html = render({"type": "hologram", "data": EVIL})
    assert "hologram" in html
    assert EVIL not in html
    assert "&lt;script&gt;" in html


@pytest.mark.parametrize(
    ("blob", "size"), [("", 0), ("QQ==", 1), ("QUI=", 2), ("QUJD", 3), ("QUJ", None), (5, None)]
)
def test_blob_size(blob: Any, size: int | None):
    assert blob_size(blob) == size


# -- whole results ----------------------------------------------------------------------------


def test_a_tool_result_keeps_blocks_structured_content_and_failure():
    view = result_view(
        "tools/call",
        {
            "content": [{"type": "text", "text": "hi"}],
            "structuredContent": {"b": [1, 2], "a": "ü"},
            "isError": True,
        },
    )
    assert view is not None and view.kind == "tool" and view.is_error
    assert [b.text for b in view.blocks] == ["hi"]
    assert view.structured == '{\n  "b": [\n    1,\n    2\n  ],\n  "a": "ü"\n}'
    assert result_view("tools/call", {"content": []}).structured == ""
    assert result_view("tools/call", None) is None


def test_a_prompt_result_lists_its_messages():
    view = result_view(
        "prompts/get",
        {
            "description": "d",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Say hi"}},
                {
                    "role": "assistant",
                    "content": {"type": "image", "mimeType": "image/png", "data": PNG},
                },
            ],
        },
    )
    assert view.description == "d"
    assert [(m.role, m.blocks[0].kind) for m in view.messages] == [
        ("user", "text"),
        ("assistant", "image"),
    ]


def test_a_resource_result_lists_its_contents():
    view = result_view(
        "resources/read",
        {"contents": [{"uri": "peer://x", "text": "t"}, {"uri": "peer://y", "blob": "QUJD"}]},
    )
    assert [(c.kind, c.uri) for c in view.contents] == [
        ("resource_text", "peer://x"),
        ("resource_blob", "peer://y"),
    ]


def test_answers_read_like_a_person_wrote_them():
    assert answer_value(True) == "yes"
    assert answer_value(False) == "no"
    assert answer_value(["ops", "dev"]) == "ops, dev"
    assert answer_value([]) == "(none)"
    assert answer_value(2.5) == "2.5"
    assert answer_value("x") == "x"
