"""``{% single_sign_on_button next %}``: the "Sign in with …" link on the sign-in page, when
single sign-on is configured (a link, not a form: the provider is another origin, and a form
sent there would break the CSP's form-action)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import template
from django.conf import settings
from django.urls import reverse

from mrtrweb.accounts.oidc import enabled

register = template.Library()


@register.inclusion_tag("accounts/single_sign_on_button.html")
def single_sign_on_button(next_url: str = "") -> dict[str, Any]:
    if not enabled():
        return {"url": ""}
    url = reverse("oidc_authentication_init")
    if next_url:
        url = f"{url}?{urlencode({'next': next_url})}"
    return {"url": url, "name": settings.MRTRWEB_OIDC_NAME}
