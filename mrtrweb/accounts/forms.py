"""The one field of two-step sign-in: a code, checked against a person's devices."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .second_factor import Checked


class CodeForm(forms.Form):
    code = forms.CharField(
        label=_("Code"),
        max_length=32,
        strip=True,
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "inputmode": "text", "autofocus": True}
        ),
    )

    def __init__(self, *args: Any, check: Callable[[str], Checked], help_text: str, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._check = check
        self.fields["code"].help_text = help_text
        self.checked: Checked | None = None

    def clean_code(self) -> str:
        code: str = self.cleaned_data["code"]
        self.checked = self._check(code)
        if self.checked.device is not None:
            return code
        if self.checked.wait_until is not None:
            seconds = max(1, round((self.checked.wait_until - timezone.now()).total_seconds()))
            raise forms.ValidationError(
                f"Too many wrong codes. Wait {seconds} s, then try again.", code="throttled"
            )
        raise forms.ValidationError(
            _("That code is not right (or was used already). Try the code your app shows now."),
            code="wrong",
        )
