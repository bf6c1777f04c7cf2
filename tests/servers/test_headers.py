"""The custom-header rules shared by ``manage.py mcp_server`` and the console."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

from mrtrweb.servers.headers import HeaderError, parse_header, parse_headers
from mrtrweb.servers.management.commands.mcp_server import headers_from

SECRET = "v-SECRET-42"


def test_a_valid_header_is_split_and_trimmed() -> None:
    assert parse_header("  X-Api-Key :  abc def ") == ("X-Api-Key", "abc def")
    assert parse_header("X-Empty:") == ("X-Empty", "")
    assert parse_header("X-Colon: a:b") == ("X-Colon", "a:b")


@pytest.mark.parametrize(
    ("raw", "code", "message"),
    [
        (SECRET, "format", 'must look like "Name: value"'),
        (f": {SECRET}", "format", 'must look like "Name: value"'),
        (f"Bad Name: {SECRET}", "name", "'Bad Name' is not a valid header name"),
        (f"Authorization: {SECRET}", "reserved", "Authorization is set by mrtrweb itself (use X)"),
        (f"content-type: {SECRET}", "reserved", "content-type is set by mrtrweb itself"),
        (f"Mcp-Param-Foo: {SECRET}", "reserved", "Mcp-Param-Foo is set by mrtrweb itself"),
        (f"Mcp-Session-Id: {SECRET}", "reserved", "Mcp-Session-Id is set by mrtrweb itself"),
        (f"X-Key: {SECRET}\x00", "value", "X-Key: the value must be printable ASCII on one line"),
        (f"X-Key: caf\u00e9 {SECRET}", "value", "X-Key: the value must be printable ASCII"),
        (f"X-Key: {SECRET}\r\nX-Evil: 1", "value", "X-Key: the value must be printable ASCII"),
    ],
)
def test_refusals_name_the_problem_but_never_the_value(raw: str, code: str, message: str) -> None:
    with pytest.raises(HeaderError) as caught:
        parse_header(raw, token_hint="X")
    assert caught.value.code == code
    assert str(caught.value).startswith(message)
    assert SECRET not in str(caught.value)


def test_a_textarea_skips_blank_lines_and_numbers_the_bad_one() -> None:
    assert parse_headers(["A: 1", "", "  ", "B: 2"], line_numbers=True) == {"A": "1", "B": "2"}
    with pytest.raises(HeaderError, match=r"^Line 3: a is given twice$"):
        parse_headers(["A: 1", "", "a: 2"], line_numbers=True)
    with pytest.raises(HeaderError, match=r'^Line 2: must look like "Name: value"$'):
        parse_headers(["A: 1", SECRET], line_numbers=True)


def test_the_command_uses_the_same_rules() -> None:
    assert headers_from(["X-A: 1", "X-B: 2"]) == {"X-A": "1", "X-B": "2"}
    with pytest.raises(
        CommandError,
        match=r"^--header: Authorization is set by mrtrweb itself \(use --bearer-token\)$",
    ):
        headers_from(["Authorization: x"])
    with pytest.raises(CommandError, match=r"^--header: x-a is given twice$"):
        headers_from(["X-A: 1", "x-a: 2"])
    with pytest.raises(CommandError) as caught:
        headers_from([SECRET])
    assert SECRET not in str(caught.value)
