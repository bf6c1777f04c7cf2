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
from django.db.models import Q

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


def load_permissions(user: Any) -> None:
    """Read ``user``'s permissions, their own and their groups', in one query where Django's
    ModelBackend reads them in two, and keep them where it keeps them (``_perm_cache`` on the
    user object, which lives as long as the request): every ``has_perm`` of this request then
    reads that set. Nothing is kept beyond the request, so a permission taken away counts on
    the next one. Superusers are not looked up (``has_perm`` answers True before any backend),
    nor are inactive or anonymous users (ModelBackend gives them none)."""
    if (
        not getattr(user, "is_authenticated", False)
        or not user.is_active
        or user.is_superuser
        or hasattr(user, "_perm_cache")
    ):
        return
    rows = (
        Permission.objects.filter(Q(user=user) | Q(group__user=user))
        .values_list("content_type__app_label", "codename")
        .order_by()
    )
    user._perm_cache = {f"{app}.{codename}" for app, codename in rows}


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
