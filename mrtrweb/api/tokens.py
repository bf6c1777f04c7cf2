"""A signed-in person's API tokens: make one (shown once), list them, revoke one, and show
the secret their webhooks are signed with.

Ordinary pages with sessions and CSRF; a token's text exists only in the response that
creates it (never stored, never in a redirect or a message). The webhook secret is stored
encrypted and shown only in answer to a POST, never cached.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from mrtrweb.http import SeeOther, SignedInRequest

from .models import ApiToken


class TokenForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=100,
        help_text=_("What the token is for, e.g. “deploy pipeline”."),
    )


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def token_list(request: SignedInRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    created = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            token, plain = ApiToken.issue(request.user, form.cleaned_data["name"])
            created = {"token": token, "plain": plain}
            form = TokenForm()
            status = 201
        else:
            status = 422
    return _render(request, form, created=created, status=status)


def _render(
    request: SignedInRequest,
    form: TokenForm,
    *,
    created: dict[str, Any] | None = None,
    secret_of: ApiToken | None = None,
    status: int = 200,
) -> HttpResponse:
    tokens = ApiToken.objects.filter(user=request.user)
    context = {"form": form, "tokens": tokens, "created": created, "secret_of": secret_of}
    return render(request, "api/tokens.html", context, status=status)


@never_cache
@login_required
@require_POST
def token_secret(request: SignedInRequest, pk: int) -> HttpResponse:
    """The page again, with this token's webhook secret shown (receivers verify with it)."""
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    return _render(request, TokenForm(), secret_of=token)


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    # Someone else's token is a 404, exactly like one that does not exist.
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    if token.is_active and request.POST.get("confirmed") != "1":
        # It cannot be undone: the list's button only asks (no JavaScript needed).
        return render(request, "api/token_revoke.html", {"token": token})
    token.revoke()
    messages.success(
        request,
        _("Token “%(name)s” revoked: programs using it are refused now.") % {"name": token.name},
    )
    return SeeOther(reverse("tokens:list"))
