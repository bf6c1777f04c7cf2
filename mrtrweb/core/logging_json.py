"""One JSON object per log record, for log collectors (``DJANGO_LOG_FORMAT=json``).

Built on python-json-logger. Every line carries ``time`` (ISO 8601, UTC, milliseconds),
``level``, ``logger`` and ``message``; whatever a caller passes in ``extra=`` (the engine's
event lines pass ``call_id``, ``round_id``, ``kind`` and a ``detail`` object) is added as
top-level keys, and an exception as ``exc_info`` text.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as _LibraryFormatter


class JsonFormatter(_LibraryFormatter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("fmt", "{levelname}{name}{message}")
        kwargs.setdefault("style", "{")
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        # Non-JSON values (a Path, a datetime, a model) become their str() rather than
        # failing the record.
        kwargs.setdefault("json_default", str)
        # uvicorn adds an ANSI-coloured copy of its message for terminals.
        kwargs.setdefault("reserved_attrs", [*RESERVED_ATTRS, "color_message"])
        super().__init__(*args, **kwargs)

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        # The time first, so a line reads in order even before it is parsed.
        log_data["time"] = datetime.fromtimestamp(record.created, UTC).isoformat(
            timespec="milliseconds"
        )
        super().add_fields(log_data, record, message_dict)
