"""Django's model backend, loading a user's permissions in one query instead of two.

Why: every page checks a role (``calls.roles.is_admin`` and friends), and Django's backend
reads the user's own permissions and their groups' permissions with a query each, on every
request. The answer is the same set; only the number of queries changes.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission
from django.db.models import Q, QuerySet


class OneQueryModelBackend(ModelBackend):
    def _all_permissions(self, user_obj: Any) -> QuerySet[Any]:
        perms = (
            Permission.objects.all()
            if user_obj.is_superuser
            else Permission.objects.filter(Q(user=user_obj) | Q(group__user=user_obj))
        )
        return perms.values_list("content_type__app_label", "codename").order_by().distinct()

    def get_all_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if not hasattr(user_obj, "_perm_cache"):
            rows = self._all_permissions(user_obj)
            user_obj._perm_cache = {f"{app}.{name}" for app, name in rows}
        return user_obj._perm_cache

    async def aget_all_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if not hasattr(user_obj, "_perm_cache"):
            user_obj._perm_cache = {
                f"{app}.{name}" async for app, name in self._all_permissions(user_obj)
            }
        return user_obj._perm_cache
