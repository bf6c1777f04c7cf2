"""Logging filters (settings.LOGGING).

Django logs every 403 (and a 400 from a bad multipart body) on ``django.request`` with the
exception's whole traceback. A refusal is the site working as meant, not a fault: one line
says enough, with the reason the code gave. 5xx records keep their traceback.
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
