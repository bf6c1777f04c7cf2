"""Django's template backend, with pages that can always be sent.

JSON lets a server write a lone surrogate (``"\\ud800"``) in any string, ``json.loads`` keeps
it, and the pipeline keeps it too, so an answer reaches the server exactly as asked. But such
a string has no UTF-8 form: a page that shows it (a question's message, a field's title, an
option) would fail when Django encodes the response, a 500 instead of the page. Each page is
therefore rendered as usual and any surrogate left in it becomes U+FFFD, as a browser shows
bytes it cannot read.
"""

from __future__ import annotations

import re
from typing import Any

from django.template.backends import django as django_backend
from django.template.exceptions import TemplateDoesNotExist
from django.utils.safestring import SafeString, mark_safe

_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (safe strings stay safe)."""
    if not _SURROGATE.search(text):
        return text
    fixed = _SURROGATE.sub("\ufffd", text)
    # Swapping one character for U+FFFD cannot make markup: escaped output stays escaped.
    return mark_safe(fixed) if isinstance(text, SafeString) else fixed


class Template(django_backend.Template):
    def render(self, context: Any = None, request: Any = None) -> str:
        return well_formed(super().render(context, request))


class DjangoTemplates(django_backend.DjangoTemplates):
    """``django.template.backends.django.DjangoTemplates`` whose output always encodes."""

    def from_string(self, template_code: str) -> Template:
        return Template(self.engine.from_string(template_code), self)

    def get_template(self, template_name: str) -> Template:
        try:
            return Template(self.engine.get_template(template_name), self)
        except TemplateDoesNotExist as exc:
            django_backend.reraise(exc, self)
