"""Authorization responses never reach a log.

An authorization server sends the person back to mrtrweb's callback with ``code`` and
``state`` in the query, and uvicorn's access line quotes every request's path with its query.
:class:`RedactAuthorizationResponse`, installed on ``uvicorn.access`` when the app loads
(``apps.py``), replaces those values before any handler formats the line.
"""

from __future__ import annotations

import logging
import re

ACCESS_LOGGER = "uvicorn.access"
# The request target is uvicorn's third argument: '%s - "%s %s HTTP/%s" %d'.
_TARGET = 2
_SECRETS = re.compile(r"([?&](?:code|state)=)[^&\s]*")


def redact(target: str) -> str:
    return _SECRETS.sub(r"\1[redacted]", target)


class RedactAuthorizationResponse(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) > _TARGET:
            target = args[_TARGET]
            if isinstance(target, str):
                record.args = (*args[:_TARGET], redact(target), *args[_TARGET + 1 :])
        return True


def install() -> None:
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, RedactAuthorizationResponse) for f in logger.filters):
        logger.addFilter(RedactAuthorizationResponse())
