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


def is_admin(user: Any) -> bool:
    return bool(getattr(user, "is_active", False) and user.has_perm("calls.manage_rounds"))


def is_operator(user: Any) -> bool:
    return bool(getattr(user, "is_active", False) and user.has_perm("servers.manage_connections"))


def active_usernames(limit: int = 500) -> list[str]:
    """Suggestions for the forms' user fields (a datalist; any active username is accepted),
    capped so a large site's page stays small."""
    User = get_user_model()
    return list(
        User.objects.filter(is_active=True)
        .order_by(User.USERNAME_FIELD)
        .values_list(User.USERNAME_FIELD, flat=True)[:limit]
    )
