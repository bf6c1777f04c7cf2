"""Who answers a connection's or a tool's rounds, as the console's forms take it: a user by
username, and only the target the chosen routing uses kept."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _

from .models import Routing

__all__ = ["RouteUserField", "apply_routing"]


class RouteUserField(forms.CharField):
    """A user named by username (a text field, since a select of every user does not scale)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("max_length", 150)
        kwargs.setdefault("label", "User")
        kwargs.setdefault("widget", forms.TextInput(attrs={"list": "usernames"}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return value.get_username() if hasattr(value, "get_username") else value

    def clean(self, value: Any) -> Any:
        username = super().clean(value)
        if not username:
            return None
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: username}, is_active=True).first()
        if user is None:
            raise forms.ValidationError(_("No active user has this username."), code="unknown_user")
        return user


def apply_routing(form: forms.ModelForm, cleaned: dict[str, Any]) -> None:
    """Keep only the target the routing uses, so a stale user or group never lingers."""
    routing = cleaned.get("routing")
    user = cleaned.get("route_user") if routing == Routing.USER else None
    group = cleaned.get("route_group") if routing == Routing.GROUP else None
    cleaned["route_user"], cleaned["route_group"] = user, group
    # Set before ModelForm's own validation, which runs the model's clean() on the instance.
    form.instance.route_user = user
    form.instance.route_group = group
