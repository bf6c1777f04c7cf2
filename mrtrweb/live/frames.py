"""The HTML frames sent over the websockets, for htmx's ws extension.

Every top-level element of a frame is swapped out-of-band into the element with the same id,
and carries ``data-live-kind`` (the engine's event kind, or ``progress``) and ``data-live-at``
(``time.time()`` when the event was published) so latency can be measured in the browser.

Frames hold no one's data. A change is a trigger element that, once swapped in, fetches the
page (or the inbox) again through its normal view, which applies the access rules; only
progress is shown as it comes, and the server's message is escaped like everything it sends.
"""

from __future__ import annotations

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe


def call_trigger_id(call_id: int) -> str:
    return f"live-call-{call_id}"


def progress_id(call_id: int) -> str:
    return f"live-progress-{call_id}"


INBOX_TRIGGER_ID = "live-inbox"
_REPLACE_URL = mark_safe(' hx-replace-url="true"')
# The part of a call or round page that a change replaces (templates/calls/*.html).
MAIN_SELECTOR = "#live-main"
# The elements holding the sockets; they outlive every swap, so a newer fetch can cancel an
# older one still on its way (hx-sync) and an older answer never overwrites a newer one.
CALL_SOCKET_SELECTOR = "#live-call-socket"
INBOX_SOCKET_SELECTOR = "#live-inbox-socket"


def _at(at: float) -> str:
    return repr(float(at))


def refresh_call(*, call_id: int, kind: str, at: float, url: str, follow_url: bool) -> SafeString:
    """Fetch ``url`` and put its ``#live-main`` in place of the page's.

    ``follow_url`` puts the address the fetch ended on (after redirects) in the address bar,
    so that a reload shows the same page.
    """
    return format_html(
        '<div id="{}" hidden data-live-kind="{}" data-live-at="{}" hx-get="{}" '
        'hx-trigger="load" hx-select="{}" hx-target="{}" hx-swap="outerHTML" '
        'hx-sync="{}:replace"{}></div>',
        call_trigger_id(call_id),
        kind,
        _at(at),
        url,
        MAIN_SELECTOR,
        MAIN_SELECTOR,
        CALL_SOCKET_SELECTOR,
        _REPLACE_URL if follow_url else "",
    )


def progress(
    *, call_id: int, at: float, value: float, total: float | None, message: str
) -> SafeString:
    """A progress bar with the server's message (an indeterminate bar without a total)."""
    bar_id = f"{progress_id(call_id)}-bar"
    if total is not None and total > 0:
        shown = min(max(value, 0.0), total)
        bar = format_html(
            '<progress id="{}" max="{}" value="{}">{} of {}</progress>',
            bar_id,
            _number(total),
            _number(shown),
            _number(shown),
            _number(total),
        )
    else:
        bar = format_html('<progress id="{}">{}</progress>', bar_id, _number(value))
    return format_html(
        '<div id="{}" class="live-progress" data-live-kind="progress" data-live-at="{}">'
        '<label for="{}">Progress</label> {}{}</div>',
        progress_id(call_id),
        _at(at),
        bar_id,
        bar,
        format_html(' <span class="progress-message">{}</span>', message) if message else "",
    )


def refresh_inbox(*, kind: str, at: float, url: str, select: str) -> SafeString:
    """Fetch the person's own inbox page and swap in the parts of it this page shows."""
    return format_html(
        '<div id="{}" hidden data-live-kind="{}" data-live-at="{}" hx-get="{}" '
        'hx-trigger="load" hx-select-oob="{}" hx-swap="none ignoreTitle:true" '
        'hx-sync="{}:replace"></div>',
        INBOX_TRIGGER_ID,
        kind,
        _at(at),
        url,
        select,
        INBOX_SOCKET_SELECTOR,
    )


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
