"""One log line per engine event, on the logger ``mrtrweb.events``.

Connected to :data:`mrtrweb.calls.signals.call_event` in ``CoreConfig.ready``. Each line
carries ``call_id``, ``round_id`` and ``kind`` as fields (top-level keys in JSON logs) and a
``detail`` object with only the detail fields known to be safe. Event details also hold
people's answers, the questions asked and what servers said; none of that may reach a log,
so the rule is an allow-list, not a deny-list: a new detail field stays out until it is
added here.
"""

from __future__ import annotations

import logging
import re
from typing import Any

logger = logging.getLogger("mrtrweb.events")

# Detail fields that carry no person's content, no credentials and no state (its SHA-256 is
# fine: it identifies a state without revealing it).
SAFE_DETAIL = frozenset(
    {
        "index",
        "http_status",
        "is_error",
        "method",
        "target",
        "restarted_from",
        "request_state_sha256",
        "cap",
        "reason",
        "classification",
        "outcome",
        "attempt",
        "attempts",
        "retry_after",
        "retry_at",
        "resent_automatically",
        "status",
        "swept",
        "stuck",
        "expires_at",
    }
)
# Events an operator should notice without searching for them.
_WARNING_KINDS = frozenset(
    {"delivery_failed", "delivery_retry_scheduled", "failed", "outcome_unknown"}
)
_MAX_TEXT = 200
# A failure's reason is "ErrorType: message", and the message may quote the server's answer
# or a URL with credentials in it: only the error type is logged (the audit trail, behind
# sign-in, keeps the message).
_ERROR_TYPE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(?=:|$)")


def safe_detail(detail: dict[str, Any] | None) -> dict[str, Any]:
    """The allow-listed scalar fields of an event's detail, long texts cut short."""
    safe: dict[str, Any] = {}
    for key, value in (detail or {}).items():
        if key not in SAFE_DETAIL:
            continue
        if key == "reason" and isinstance(value, str):
            found = _ERROR_TYPE.match(value.strip())
            safe[key] = found.group(0) if found else "(not shown)"
        elif isinstance(value, str):
            safe[key] = value[:_MAX_TEXT]
        elif value is None or isinstance(value, bool | int | float):
            safe[key] = value
    return safe


def log_call_event(
    sender: Any,
    *,
    call_id: int,
    round_id: int | None,
    kind: str,
    detail: dict[str, Any] | None = None,
    **kwargs: Any,
) -> None:
    safe = safe_detail(detail)
    where = f"call {call_id}" + (f" round {round_id}" if round_id is not None else "")
    # The detail in the message too, for plain-text logs; JSON logs also get it as an object.
    shown = "".join(f" {key}={value!r}" for key, value in safe.items())
    level = logging.WARNING if kind in _WARNING_KINDS else logging.INFO
    logger.log(
        level,
        "%s: %s%s",
        where,
        kind,
        shown,
        extra={"call_id": call_id, "round_id": round_id, "kind": kind, "detail": safe},
    )
