"""The three kinds of people, as Django groups with permissions.

- End users answer the rounds routed to them and start calls on tools exposed to them.
- Admins see and manage every call and round (``calls.manage_rounds``).
- Operators manage server connections and what they expose (``servers.manage_connections``).

Superusers count as admins and operators.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models import BooleanField, Value

END_USERS = "End users"
ADMINS = "Admins"
OPERATORS = "Operators"

ROLE_PERMISSIONS: dict[str, list[tuple[str, str]]] = {
    END_USERS: [],
    ADMINS: [("calls", "manage_rounds"), ("calls", "view_call"), ("calls", "view_round")],
    OPERATORS: [
        ("servers", "manage_connections"),
        ("servers", "view_connection"),
        ("servers", "view_toolexposure"),
    ],
}


def ensure_roles(**kwargs: Any) -> None:
    """Create the role groups and give them their permissions (idempotent)."""
    for name, perms in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=name)
        wanted = [
            Permission.objects.filter(content_type__app_label=app, codename=codename).first()
            for app, codename in perms
        ]
        group.permissions.add(*[p for p in wanted if p is not None])


def load_permissions(*users: Any) -> None:
    """Read the permissions of ``users``, their own and their groups', in one query for all of
    them (ModelBackend reads two per person), and keep them where ModelBackend keeps them on
    each user object: its own (``_user_perm_cache``), its groups' (``_group_perm_cache``) and
    the union (``_perm_cache``), so ``has_perm``, ``get_user_permissions`` and
    ``get_group_permissions`` read those sets. One request's user, or a batch of sockets'
    people (``live/checks.py``): the same code path. Nothing outlives the user object (a
    request, a batch), so a permission taken away counts on the next one. Superusers are not
    looked up (``has_perm`` answers True before any backend), nor are inactive or anonymous
    users (ModelBackend gives them none), nor anyone already looked up."""
    wanted = [
        user
        for user in users
        if getattr(user, "is_authenticated", False)
        and user.is_active
        and not user.is_superuser
        and not hasattr(user, "_perm_cache")
    ]
    if not wanted:
        return
    User = get_user_model()
    ids = {user.pk for user in wanted}
    # Both halves in one query; the last column says whose the row is (own or a group's).
    own = User.user_permissions.through.objects.filter(user_id__in=ids).values_list(
        "user_id",
        "permission__content_type__app_label",
        "permission__codename",
        Value(True, output_field=BooleanField()),
    )
    grouped = User.groups.through.objects.filter(
        user_id__in=ids, group__permissions__isnull=False
    ).values_list(
        "user_id",
        "group__permissions__content_type__app_label",
        "group__permissions__codename",
        Value(False, output_field=BooleanField()),
    )
    mine: dict[Any, set[str]] = {pk: set() for pk in ids}
    theirs: dict[Any, set[str]] = {pk: set() for pk in ids}
    for user_id, app, codename, is_own in own.union(grouped, all=True):
        (mine if is_own else theirs)[user_id].add(f"{app}.{codename}")
    for user in wanted:
        # The attribute names ModelBackend._get_permissions and get_all_permissions use.
        user._user_perm_cache = mine[user.pk]
        user._group_perm_cache = theirs[user.pk]
        user._perm_cache = mine[user.pk] | theirs[user.pk]


def is_admin(user: Any) -> bool:
    if not getattr(user, "is_active", False):
        return False
    load_permissions(user)
    return bool(user.has_perm("calls.manage_rounds"))


def is_operator(user: Any) -> bool:
    if not getattr(user, "is_active", False):
        return False
    load_permissions(user)
    return bool(user.has_perm("servers.manage_connections"))


def active_usernames(limit: int = 500) -> list[str]:
    """Suggestions for the forms' user fields (a datalist; any active username is accepted),
    capped so a large site's page stays small."""
    User = get_user_model()
    return list(
        User.objects.filter(is_active=True)
        .order_by(User.USERNAME_FIELD)
        .values_list(User.USERNAME_FIELD, flat=True)[:limit]
    )
