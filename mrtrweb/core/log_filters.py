"""Logging filters (settings.LOGGING).

Django logs every 403 (and a 400 from a bad multipart body) on ``django.request`` with the
exception's whole traceback. A refusal is the site working as meant, not a fault: one line
says enough, with the reason the code gave. 5xx records keep their traceback, but for the
readiness probe's 503, which logged why itself.
"""

from __future__ import annotations

import logging


class ClientErrorsInOneLine(logging.Filter):
    """Drop the traceback of a 4xx record, keeping the exception's message on its line."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500 and record.exc_info:
            exc = record.exc_info[1]
            reason = str(exc).strip() if exc is not None else ""
            if reason and isinstance(record.args, tuple):
                # The message is Django's format string; the reason goes in as an argument so
                # a "%" in it is not read as a placeholder.
                record.msg = f"{record.msg} (%s)"
                record.args = (*record.args, reason.replace("\n", " "))
            record.exc_info = None
            record.exc_text = None
        return True


class ReadinessLogsItself(logging.Filter):
    """Drop Django's "Service Unavailable" line for the readiness probe (``core.views.readyz``):
    the probe logged why it is not ready, and an ERROR line on every probe would bury it."""

    def filter(self, record: logging.LogRecord) -> bool:
        match = getattr(getattr(record, "request", None), "resolver_match", None)
        return not (
            getattr(record, "status_code", None) == 503
            and match is not None
            and match.url_name == "readyz"
        )
