"""The Django admin's user list gets an action to reset two-step sign-in (a lost phone);
django-otp's own admin pages list the devices themselves."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.core.exceptions import ValidationError

from mrtrweb.people import usernames

from .models import OidcIdentity
from .second_factor import remove_devices

User = get_user_model()


@admin.action(description="Reset two-step sign-in (lost phone)", permissions=["change"])
def reset_two_step(modeladmin: admin.ModelAdmin, request: Any, queryset: Any) -> None:
    people = list(queryset)
    for user in people:
        remove_devices(user)
    names = ", ".join(user.get_username() for user in people)
    modeladmin.message_user(
        request,
        f"Two-step sign-in reset for {names}: admins and operators set it up again at their "
        "next page; others sign in with their password.",
        messages.SUCCESS,
    )


def _free(form: Any) -> str:
    """The form's username, refused when another account's reads the same
    (:mod:`mrtrweb.people.usernames`)."""
    name = usernames.normalised(form.cleaned_data[User.USERNAME_FIELD])
    refused = usernames.refusal(name, other_than=form.instance)
    if refused:
        raise ValidationError(refused, code="unique")
    return name


class NewPersonForm(AdminUserCreationForm):
    def clean_username(self) -> str:
        return _free(self)


class PersonForm(UserChangeForm):
    def clean_username(self) -> str:
        return _free(self)


class TwoStepUserAdmin(UserAdmin):
    # django-stubs declares actions per instance; this extends the class's own list.
    actions = [*(UserAdmin.actions or []), reset_two_step]  # type: ignore[misc]
    add_form = NewPersonForm
    form = PersonForm


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, TwoStepUserAdmin)


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin):
    """Who signs in through the identity provider as whom. Adding a row here links a provider
    identity to an existing local account (single sign-on never does that by itself)."""

    list_display = ("user", "subject", "issuer", "created_at", "last_sign_in_at")
    search_fields = ("user__username", "subject")
    raw_id_fields = ("user",)
    readonly_fields = ("created_at", "last_sign_in_at")
