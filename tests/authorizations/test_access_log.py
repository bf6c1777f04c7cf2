"""The callback's code and state never reach uvicorn's access log (authorizations/access_log.py)."""

from __future__ import annotations

import logging

from mrtrweb.authorizations import access_log


def test_the_access_line_of_a_callback_carries_no_code_or_state() -> None:
    logger = logging.getLogger(access_log.ACCESS_LOGGER)
    assert any(isinstance(f, access_log.RedactAuthorizationResponse) for f in logger.filters)
    record = logger.makeRecord(
        logger.name,
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        (
            "127.0.0.1:5",
            "GET",
            "/oauth/callback/?code=code-sekret-1&state=st-sekret-2&iss=http%3A%2F%2Fas",
            "1.1",
            303,
        ),
        None,
    )
    assert logger.filter(record)
    line = record.getMessage()
    assert "sekret" not in line
    assert line == (
        '127.0.0.1:5 - "GET /oauth/callback/?code=[redacted]&state=[redacted]'
        '&iss=http%3A%2F%2Fas HTTP/1.1" 303'
    )


def test_other_lines_pass_unchanged() -> None:
    assert access_log.redact("/calls/start/x/?tool=a") == "/calls/start/x/?tool=a"
    assert access_log.redact("/x/?encode=1&code=abc") == "/x/?encode=1&code=[redacted]"
