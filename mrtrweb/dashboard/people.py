"""People and groups on the admins' own pages: list people, invite by email, set roles and
groups, switch accounts off and on; list and create groups, add and remove members.

The roles are the groups of :mod:`mrtrweb.people.roles` (End users, Operators, Admins). An
invitation makes an account without a password and emails a link to set one: Django's
password-reset token and page (mrtrweb/accounts/signin.py), so it works once and for
``PASSWORD_RESET_TIMEOUT``. Guard rails: an admin cannot switch off or demote themselves (the
site would lose its last admin that way too easily), and only a superuser changes a superuser.
"""

from __future__ import annotations

import logging
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import PermissionDenied
from django.core.mail import send_mail
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from mrtrweb.http import SeeOther, text_param, whole_number
from mrtrweb.people import usernames
from mrtrweb.people.roles import ADMINS, END_USERS, OPERATORS, ensure_roles
from mrtrweb.people.speaking import writing_to
from mrtrweb.policies.models import Delegation

from .views import admin_only

logger = logging.getLogger(__name__)

User = get_user_model()
ROLES = (END_USERS, OPERATORS, ADMINS)
ROLE_HELP = {
    END_USERS: "start the tools operators expose, answer what is routed to them",
    OPERATORS: "manage connections, see every tool",
    ADMINS: "the dashboard, people and groups",
}
PAGE_SIZE = 50


# -- forms ------------------------------------------------------------------------------------


def _role_field(initial: list[str] | None = None) -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=[(name, f"{name}: {ROLE_HELP[name]}") for name in ROLES],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        initial=initial,
        label=_("Roles"),
    )


class InviteForm(forms.Form):
    username = forms.CharField(
        max_length=150,
        help_text=_("What they sign in with. Letters, digits and @ . + - _ only."),
    )
    email = forms.EmailField(help_text=_("The link to set their password goes here."))
    roles = _role_field([END_USERS])

    def clean_username(self) -> str:
        username = usernames.normalised(self.cleaned_data["username"])
        User.username_validator(username)
        refused = usernames.refusal(username)
        if refused:
            raise forms.ValidationError(refused)
        return username


class IdChoices(forms.ModelMultipleChoiceField):
    """Ticked boxes by id: a value that is no id (not ASCII digits, too large for the column)
    is an invalid choice before any query, where some databases would fail on it."""

    def clean(self, value: Any) -> Any:
        for pk in value or ():
            if whole_number(str(pk)) is None:
                raise forms.ValidationError(
                    self.error_messages["invalid_pk_value"],
                    code="invalid_pk_value",
                    params={"pk": pk},
                )
        return super().clean(value)


class PersonForm(forms.Form):
    email = forms.EmailField(required=False)
    roles = _role_field()
    groups = IdChoices(
        queryset=Group.objects.exclude(name__in=ROLES).order_by("name"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label=_("Groups"),
        help_text=_("Rounds routed to a group wait for every member."),
    )


class GroupForm(forms.Form):
    name = forms.CharField(max_length=150, label=_("Name of the new group"))

    def clean_name(self) -> str:
        name = " ".join(self.cleaned_data["name"].split())
        if Group.objects.filter(name__iexact=name).exists():
            raise forms.ValidationError(_("A group of this name exists already."))
        return name


# -- helpers ----------------------------------------------------------------------------------


def _guard(request: HttpRequest, person: Any) -> None:
    if person.is_superuser and not request.user.is_superuser:
        raise PermissionDenied(_("Only a superuser changes a superuser's account."))


def set_password_link(person: Any) -> str:
    """A link that sets ``person``'s password once (Django's reset token), on the public
    address of the site."""
    uid = urlsafe_base64_encode(force_bytes(person.pk))
    token = default_token_generator.make_token(person)
    path = reverse("password_reset_confirm", kwargs={"uidb64": uid, "token": token})
    return settings.MRTRWEB_BASE_URL.rstrip("/") + path


def send_set_password_link(person: Any, by: Any, *, invitation: bool) -> bool:
    """Email ``person`` the link; False (and logged) when the mail could not be sent."""
    context = {
        "person": person,
        "by": by,
        "link": set_password_link(person),
        "sign_in": settings.MRTRWEB_BASE_URL.rstrip("/") + reverse("login"),
        "invitation": invitation,
    }
    # In the invited person's language (their choice, else the site's), not the admin's.
    with writing_to(person):
        # str() here: a lazy subject would be read when sent, outside their language.
        subject = str(
            _("You are invited to mrtrweb") if invitation else _("Set a new password for mrtrweb")
        )
        body = render_to_string("dashboard/invite_email.txt", context)
    try:
        send_mail(subject, body, None, [person.email])
    except Exception:  # an unreachable mail server must not lose the account just made
        logger.exception("could not email a set-password link to user %s", person.pk)
        return False
    return True


def _roles_of(person: Any) -> list[str]:
    return [group.name for group in person.groups.all() if group.name in ROLES]


# -- people -----------------------------------------------------------------------------------


@admin_only
@require_safe
def people(request: HttpRequest) -> HttpResponse:
    raw = text_param(request.GET, "q")
    query = (raw or "").strip()
    everyone = User.objects.order_by("username").prefetch_related("groups")
    if raw is None:  # a NUL: no name or address holds one
        everyone = everyone.none()
    elif query:
        everyone = everyone.filter(Q(username__icontains=query) | Q(email__icontains=query))
    page = Paginator(everyone, PAGE_SIZE).get_page(whole_number(request.GET.get("page")) or 1)
    rows = [
        {
            "person": person,
            "roles": [g.name for g in person.groups.all() if g.name in ROLES],
            "groups": [g.name for g in person.groups.all() if g.name not in ROLES],
        }
        for person in page
    ]
    return render(
        request,
        "dashboard/people.html",
        {"rows": rows, "page": page, "query": query, "tab": "people"},
    )


@admin_only
@require_http_methods(["GET", "POST"])
def invite(request: HttpRequest) -> HttpResponse:
    ensure_roles()
    form = InviteForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            person = User.objects.create_user(
                form.cleaned_data["username"], email=form.cleaned_data["email"]
            )  # no password: the link sets it
            person.groups.set(Group.objects.filter(name__in=form.cleaned_data["roles"]))
        if send_set_password_link(person, request.user, invitation=True):
            messages.success(
                request,
                f"{person.get_username()} is invited: a link to set a password went to "
                f"{person.email}.",
            )
        else:
            messages.error(
                request,
                f"The account {person.get_username()} was made, but the email could not be "
                "sent. Send the link again from their page once mail works.",
            )
        return SeeOther(reverse("dashboard:person", kwargs={"pk": person.pk}))
    return render(request, "dashboard/invite.html", {"form": form, "tab": "people"})


@admin_only
@require_http_methods(["GET", "POST"])
def person(request: HttpRequest, pk: int) -> HttpResponse:
    ensure_roles()
    person = get_object_or_404(User, pk=pk)
    if request.method == "POST":
        _guard(request, person)
        form = PersonForm(request.POST)
        if form.is_valid():
            roles = form.cleaned_data["roles"]
            if person == request.user and ADMINS in _roles_of(person) and ADMINS not in roles:
                form.add_error("roles", "You cannot take the Admins role from yourself.")
            else:
                with transaction.atomic():
                    person.email = form.cleaned_data["email"]
                    person.save(update_fields=["email"])
                    chosen = [*Group.objects.filter(name__in=roles), *form.cleaned_data["groups"]]
                    person.groups.set(chosen)
                messages.success(
                    request,
                    _("Saved %(username)s's roles and groups.")
                    % {"username": person.get_username()},
                )
                return SeeOther(reverse("dashboard:person", kwargs={"pk": person.pk}))
    else:
        form = PersonForm(
            initial={
                "email": person.email,
                "roles": _roles_of(person),
                "groups": person.groups.exclude(name__in=ROLES),
            }
        )
    return render(
        request,
        "dashboard/person.html",
        {
            "person": person,
            "form": form,
            "tab": "people",
            "is_self": person == request.user,
            "has_password": person.has_usable_password(),
            # Who stands in for them, and for whom they stand in, now or later (read only:
            # each person sets their own at /account/away/).
            "delegations": Delegation.objects.filter(
                Q(person=person) | Q(delegate=person), until__gt=timezone.now()
            )
            .select_related("person", "delegate")
            .order_by("starts_at", "pk"),
        },
    )


@admin_only
@require_POST
def person_active(request: HttpRequest, pk: int) -> HttpResponse:
    """Switch an account off (after a confirmation step) or on again."""
    person = get_object_or_404(User, pk=pk)
    _guard(request, person)
    here = reverse("dashboard:person", kwargs={"pk": person.pk})
    turn_on = request.POST.get("active") == "1"
    if not turn_on and person == request.user:
        messages.error(request, _("You cannot switch off your own account."))
        return SeeOther(here)
    if not turn_on and request.POST.get("confirmed") != "1":
        return render(request, "dashboard/person_off.html", {"person": person, "tab": "people"})
    person.is_active = turn_on
    person.save(update_fields=["is_active"])
    messages.success(
        request,
        f"{person.get_username()} can sign in again."
        if turn_on
        else f"{person.get_username()} is switched off: they cannot sign in and their API "
        "tokens stop working. Reassign the rounds waiting for them.",
    )
    return SeeOther(here)


@admin_only
@require_POST
def person_link(request: HttpRequest, pk: int) -> HttpResponse:
    """Email the person a link to set their password (again)."""
    person = get_object_or_404(User, pk=pk)
    _guard(request, person)
    here = reverse("dashboard:person", kwargs={"pk": person.pk})
    if not person.is_active or not person.email:
        messages.error(request, _("Only an account that is switched on and has an email address."))
    elif send_set_password_link(person, request.user, invitation=not person.has_usable_password()):
        messages.success(
            request, _("A link to set a password went to %(email)s.") % {"email": person.email}
        )
    else:
        messages.error(request, _("The email could not be sent."))
    return SeeOther(here)


# -- groups -----------------------------------------------------------------------------------


@admin_only
@require_http_methods(["GET", "POST"])
def groups(request: HttpRequest) -> HttpResponse:
    ensure_roles()
    form = GroupForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        group = Group.objects.create(name=form.cleaned_data["name"])
        messages.success(
            request, _("The group %(name)s is made; add its members here.") % {"name": group.name}
        )
        return SeeOther(reverse("dashboard:group", kwargs={"pk": group.pk}))
    listed = Group.objects.annotate(members=Count("user", filter=Q(user__is_active=True))).order_by(
        "name"
    )
    return render(
        request,
        "dashboard/groups.html",
        {"groups": listed, "roles": ROLES, "form": form, "tab": "groups"},
    )


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150, label=_("Add a member (username)"))

    def clean_username(self) -> Any:
        found = User.objects.filter(username=self.cleaned_data["username"].strip()).first()
        if found is None:
            raise forms.ValidationError(_("There is no account with this username."))
        return found


@admin_only
@require_http_methods(["GET", "POST"])
def group(request: HttpRequest, pk: int) -> HttpResponse:
    group = get_object_or_404(Group, pk=pk)
    here = reverse("dashboard:group", kwargs={"pk": group.pk})
    form = MemberForm()
    if request.method == "POST":
        remove = request.POST.get("remove", "")
        if remove:
            number = whole_number(remove)
            member = group.user_set.filter(pk=number).first() if number is not None else None
            if member is None:
                raise Http404(_("%(name)s has no such member.") % {"name": group.name})
            _guard(request, member)
            if member == request.user and group.name == ADMINS:
                messages.error(request, _("You cannot take the Admins role from yourself."))
            else:
                group.user_set.remove(member)
                messages.success(
                    request,
                    _("%(username)s left %(name)s.")
                    % {"username": member.get_username(), "name": group.name},
                )
            return SeeOther(here)
        form = MemberForm(request.POST)
        if form.is_valid():
            member = form.cleaned_data["username"]
            _guard(request, member)
            group.user_set.add(member)
            messages.success(
                request,
                _("%(username)s joined %(name)s.")
                % {"username": member.get_username(), "name": group.name},
            )
            return SeeOther(here)
    members = group.user_set.order_by("username")
    return render(
        request,
        "dashboard/group.html",
        {
            "group": group,
            "members": members,
            "form": form,
            "is_role": group.name in ROLES,
            "role_help": ROLE_HELP.get(group.name, ""),
            "tab": "groups",
        },
    )
