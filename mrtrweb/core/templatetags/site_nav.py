"""The header menu's "you are here": ``aria-current`` on the link of the page shown.

``<a href="{{ url }}"{% current url request.path %}>`` writes ``aria-current="page"`` on the
link to the page itself and ``aria-current="true"`` on a section's link while one of its
pages is shown (a call under "My calls"), so screen readers say where the person is and the
CSS marks it. Links to deeper sections name them (``{% current calls_url path start_url %}``):
"Start a call" (/calls/start/) is not also "My calls" (/calls/).
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


@register.simple_tag
def current(url: str | None, path: str | None, *deeper: str | None) -> SafeString | str:
    if not url or not path:
        return ""
    if path == url:
        return format_html(' aria-current="{}"', "page")
    # The home page ("/") starts every path: only the page itself is home.
    if url == "/" or not path.startswith(url):
        return ""
    if any(other and other.startswith(url) and path.startswith(other) for other in deeper):
        return ""
    return format_html(' aria-current="{}"', "true")
