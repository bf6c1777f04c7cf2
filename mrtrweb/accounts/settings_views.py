"""/account/: a person's own settings (the time zone times are shown in), and the way to the
other account pages."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from mrtrweb.http import SeeOther

from .models import Preferences
from .timezones import COOKIE, account_zone_name, remember, zone, zone_names


class TimeZoneForm(forms.Form):
    time_zone = forms.ChoiceField(label="Time zone", required=False)

    def __init__(self, *args: object, browser_zone: str = "", **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        automatic = (
            f"Automatic: your browser's ({browser_zone})"
            if browser_zone
            else "Automatic: your browser's (not known yet, so UTC)"
        )
        field = self.fields["time_zone"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", automatic), *((name, name) for name in sorted(zone_names()))]
        field.help_text = "Deadlines and other times on every page are shown in this zone."


@login_required
@require_http_methods(["GET", "POST"])
def account(request: HttpRequest) -> HttpResponse:
    browser = request.COOKIES.get(COOKIE, "")
    browser_zone = browser if zone(browser) is not None else ""
    if request.method == "POST":
        form = TimeZoneForm(request.POST, browser_zone=browser_zone)
        if form.is_valid():
            name = form.cleaned_data["time_zone"]
            Preferences.objects.update_or_create(user=request.user, defaults={"time_zone": name})
            remember(request, name)
            messages.success(
                request,
                f"Times are now shown in {name}."
                if name
                else "Times now follow your browser's time zone.",
            )
            return SeeOther(reverse("account:settings"))
    else:
        form = TimeZoneForm(
            initial={"time_zone": account_zone_name(request)}, browser_zone=browser_zone
        )
    return render(request, "accounts/settings.html", {"form": form})
