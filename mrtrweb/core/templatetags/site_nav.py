"""The header menu: its links (``nav_url``) and its "you are here" (``current``).

``current`` writes ``aria-current`` on the link of the page shown.

``<a href="{{ url }}"{% current url request.path %}>`` writes ``aria-current="page"`` on the
link to the page itself and ``aria-current="true"`` on a section's link while one of its
pages is shown (a call under "My calls"), so screen readers say where the person is and the
CSS marks it. Links to deeper sections name them (``{% current calls_url path start_url %}``):
"Start a call" (/calls/start/) is not also "My calls" (/calls/).
"""

from __future__ import annotations

import threading
from weakref import WeakKeyDictionary

from django import template
from django.urls import (
    NoReverseMatch,
    URLResolver,
    get_resolver,
    get_script_prefix,
    get_urlconf,
    reverse,
)
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


# URL resolver -> (script prefix, view name) -> the menu link's path. Weak: a resolver that
# Django drops (clear_url_caches, when a test changes ROOT_URLCONF) takes its links with it.
_links: WeakKeyDictionary[URLResolver, dict[tuple[str, str], str]] = WeakKeyDictionary()
_lock = threading.Lock()


@register.simple_tag
def nav_url(name: str) -> str:
    """``{% nav_url 'inbox:index' as inbox_url %}``: ``{% url %}`` for the header menu's
    links, which every page shows: a name without arguments, reversed once per URL
    configuration and script prefix rather than on every page (a dozen reversals a page,
    about 0.4 ms). Like ``{% url name as var %}``, a name that is not installed
    (an optional app's) gives "".

    The menu's names each have one instance, so which app the page belongs to
    (``{% url %}``'s ``current_app``) cannot change the answer.
    """
    resolver = get_resolver(get_urlconf())
    key = (get_script_prefix(), name)
    links = _links.get(resolver)
    if links is None:
        with _lock:
            links = _links.setdefault(resolver, {})
    link = links.get(key)
    if link is None:
        try:
            link = reverse(name)
        except NoReverseMatch:
            link = ""
        links[key] = link
    return link
