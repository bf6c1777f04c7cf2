"""Server text that reaches a header is made safe there: a tool named with CR/LF still gets its
round emailed (through the real park path, with a real peer), and the client's own headers
carry any name without raising."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.mcp.headers import encode_header_value
from mrtrweb.mcp.oneline import one_line
from tests.inbox.support import connection, operator
from tests.peers.limits_server import CRLF_TOOL
from tests.support.headers import decode_header_value

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(
    "message", ["", "\r\nBcc: evil@example.com\r\n\r\nbody"], ids=["name", "message"]
)
def test_a_tool_named_with_crlf_still_emails_its_round(
    limits_peer: Any, mailoutbox: Any, message: str
) -> None:
    otto = operator()
    conn = connection(limits_peer, "hostile")
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target=CRLF_TOOL,
        arguments={"message": message},
        user=otto,
    )
    # The server checks Mcp-Name against the body (base64 sentinel decoded): it matched.
    assert call.status == Call.Status.WAITING, call.error
    round = call.rounds.get(status=Round.Status.PENDING)

    (email,) = mailoutbox
    assert email.recipients() == [otto.email]
    assert "\r" not in email.subject and "\n" not in email.subject
    assert email.subject.startswith("[mrtrweb] otto asks: ")  # who started the call
    assert "Bcc: evil@example.com" in email.subject  # shown, on one line, inside the subject
    sent = email.message()
    assert sent["Bcc"] is None and sent["Subject"] is not None
    assert round.get_absolute_url() in email.body

    # The expiry email names the tool in its subject, whatever the question said.
    engine.expire(round, None, notify=True)
    expired = mailoutbox[-1]
    assert len(mailoutbox) == 2 and expired.recipients() == [otto.email]
    assert expired.subject == "[mrtrweb] Expired: hostile server tool ask Bcc: evil@example.com"
    assert expired.message()["Bcc"] is None


def test_one_line_flattens_what_breaks_a_header_or_misleads_a_reader() -> None:
    assert one_line("a\r\nBcc: x") == "a Bcc: x"
    assert one_line("\x00nul\x1besc\x7fdel\x85nel") == "nul esc del nel"
    assert one_line("line\u2028sep\u2029para") == "line sep para"
    # A right-to-left override makes "exe.pdf" read as "fdp.exe"; it becomes a space.
    assert one_line("invoice\u202efdp.exe") == "invoice fdp.exe"
    assert one_line("  lots   of \t space  ") == "lots of space"
    cut = one_line("x" * 500, 200)
    assert len(cut) == 200 and cut.endswith("…")
    assert one_line("héllo wörld, 世界") == "héllo wörld, 世界"


@pytest.mark.parametrize(
    "name",
    ["ask\r\nBcc: evil@example.com", "tab\there", " padded ", "\x00", "=?base64?abc?=", "世界"],
)
def test_names_that_cannot_be_plain_headers_travel_as_the_base64_sentinel(name: str) -> None:
    encoded = encode_header_value(name)
    assert encoded.startswith("=?base64?") and encoded.endswith("?=")
    assert all(0x20 <= ord(c) <= 0x7E for c in encoded)
    assert decode_header_value(encoded) == name


def test_a_lone_surrogate_is_encoded_not_raised() -> None:
    # Legal in a server's JSON ("\ud800"), with no UTF-8 form.
    encoded = encode_header_value("tool\ud800")
    assert base64.b64decode(encoded[9:-2]) == b"tool\xed\xa0\x80"
