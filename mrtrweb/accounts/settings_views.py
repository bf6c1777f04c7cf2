"""/account/: a person's own settings (the language pages and emails are in, the time zone times
are shown in), and the way to the other account pages. Each setting is a form of its own with
its own button, so switching the language is one plain form post (no JavaScript)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from mrtrweb.http import SeeOther, SignedInRequest

from . import languages
from .models import Preferences
from .timezones import COOKIE, account_zone_name, remember, zone, zone_names


class TimeZoneForm(forms.Form):
    time_zone = forms.ChoiceField(label=gettext_lazy("Time zone"), required=False)

    def __init__(self, *args: object, browser_zone: str = "", **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        automatic = (
            _("Automatic: your browser's (%(zone)s)") % {"zone": browser_zone}
            if browser_zone
            else _("Automatic: your browser's (not known yet, so UTC)")
        )
        field = self.fields["time_zone"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", automatic), *((name, name) for name in sorted(zone_names()))]
        field.help_text = _("Deadlines and other times on every page are shown in this zone.")


class LanguageForm(forms.Form):
    language = forms.ChoiceField(
        label=gettext_lazy("Language"),
        required=False,
        help_text=gettext_lazy("Pages and the emails mrtrweb sends you are written in it."),
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        field = self.fields["language"]
        assert isinstance(field, forms.ChoiceField)
        # Each language named in itself, so a person who landed on the wrong one finds theirs.
        own = [
            (code, translation.get_language_info(code)["name_local"])
            for code, _name in settings.LANGUAGES
        ]
        field.choices = [("", _("Automatic: your browser's")), *own]


@login_required
@require_http_methods(["GET", "POST"])
def account(request: SignedInRequest) -> HttpResponse:
    browser = request.COOKIES.get(COOKIE, "")
    browser_zone = browser if zone(browser) is not None else ""
    form = TimeZoneForm(
        initial={"time_zone": account_zone_name(request)}, browser_zone=browser_zone
    )
    language_form = LanguageForm(initial={"language": languages.account_language(request)})
    if request.method == "POST" and "language" in request.POST:
        language_form = LanguageForm(request.POST)
        if language_form.is_valid():
            code = language_form.cleaned_data["language"]
            Preferences.objects.update_or_create(user=request.user, defaults={"language": code})
            languages.remember(request, code)
            # The message is read on the next page, which is in the new language.
            with translation.override(code or languages.browser_language(request)):
                if code:
                    text = _("Pages are now shown in %(language)s.") % {
                        "language": translation.get_language_info(code)["name_local"]
                    }
                else:
                    text = _("The language now follows your browser's.")
            messages.success(request, text)
            response = SeeOther(reverse("account:settings"))
            languages.set_cookie(response, code)
            return response
    elif request.method == "POST":
        form = TimeZoneForm(request.POST, browser_zone=browser_zone)
        if form.is_valid():
            name = form.cleaned_data["time_zone"]
            Preferences.objects.update_or_create(user=request.user, defaults={"time_zone": name})
            remember(request, name)
            messages.success(
                request,
                _("Times are now shown in %(zone)s.") % {"zone": name}
                if name
                else _("Times now follow your browser's time zone."),
            )
            return SeeOther(reverse("account:settings"))
    return render(request, "accounts/settings.html", {"form": form, "language_form": language_form})
