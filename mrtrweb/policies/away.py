"""/account/away/: a person hands their rounds to someone else until a date (out of office),
and ends it early. Plain forms, no script: the pages work without JavaScript.

What a delegation does is the engine's and the inbox's (``calls.access.routing.stand_in``,
``calls.access.routed_to``): this page only writes ``Delegation`` rows of the person signed in.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from mrtrweb.http import SeeOther, SignedInRequest

from .models import Delegation

__all__ = ["away", "end"]

# Longer than this is not "away" but a change of job: an admin reassigns the work instead.
LONGEST = dt.timedelta(days=366)


class AwayForm(forms.Form):
    delegate = forms.CharField(
        label=gettext_lazy("Hand my rounds to (username)"),
        max_length=150,
        help_text=gettext_lazy("They see and answer the rounds routed to you while you are away."),
    )
    until = forms.DateField(
        label=gettext_lazy("Until and including"),
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text=gettext_lazy("Rounds come to you again the day after."),
    )

    def __init__(self, *args: Any, person: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.person = person

    def clean_delegate(self) -> Any:
        people = get_user_model()
        name = self.cleaned_data["delegate"].strip()
        delegate = people.objects.filter(is_active=True, **{people.USERNAME_FIELD: name}).first()
        if delegate is None:
            raise forms.ValidationError(_("Nobody active has that username."))
        if delegate.pk == self.person.pk:
            raise forms.ValidationError(_("Hand your rounds to someone else than yourself."))
        return delegate

    def clean_until(self) -> dt.datetime:
        day: dt.date = self.cleaned_data["until"]
        today = timezone.localdate()
        if day < today:
            raise forms.ValidationError(_("Pick today or a later day."))
        if day - today > LONGEST:  # before the day after it, which the last day a date holds lacks
            raise forms.ValidationError(_("Pick a day within a year."))
        # The end of that day where the person is (their zone is the current one).
        until = timezone.make_aware(dt.datetime.combine(day + dt.timedelta(days=1), dt.time()))
        if until - timezone.now() > LONGEST:
            raise forms.ValidationError(_("Pick a day within a year."))
        return until


def _mine(user: User) -> Any:
    """The person's delegations still running or to come, and those others gave them."""
    now = timezone.now()
    return (
        Delegation.objects.filter(Q(person=user) | Q(delegate=user), until__gt=now)
        .select_related("person", "delegate")
        .order_by("until", "pk")
    )


@login_required
@require_http_methods(["GET", "POST"])
def away(request: SignedInRequest) -> HttpResponse:
    if request.method == "POST":
        form = AwayForm(request.POST, person=request.user)
        if form.is_valid():
            delegation = Delegation.objects.create(
                person=request.user,
                delegate=form.cleaned_data["delegate"],
                until=form.cleaned_data["until"],
            )
            messages.success(
                request,
                _("Your rounds go to %(delegate)s until %(until)s.")
                % {
                    "delegate": delegation.delegate.get_username(),
                    "until": timezone.localtime(delegation.until).strftime("%Y-%m-%d %H:%M"),
                },
            )
            return SeeOther(reverse("away:away"))
    else:
        form = AwayForm(person=request.user)
    delegations = list(_mine(request.user))
    return render(
        request,
        "policies/away.html",
        {
            "form": form,
            "given": [d for d in delegations if d.person_id == request.user.pk],
            "received": [d for d in delegations if d.delegate_id == request.user.pk],
            "now": timezone.now(),
        },
    )


@login_required
@require_POST
def end(request: HttpRequest, pk: int) -> HttpResponse:
    """End one of the person's own delegations now (or drop one not begun yet)."""
    delegation = get_object_or_404(Delegation, pk=pk, person=request.user)
    now = timezone.now()
    if delegation.until > now:
        delegation.until = max(now, delegation.starts_at)
        delegation.save(update_fields=["until"])
        messages.success(request, _("Your rounds come to you again."))
    return SeeOther(reverse("away:away"))
