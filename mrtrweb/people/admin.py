"""Django's admin as the roles see it: what every app's read-only admin pages share."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .roles import is_admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """View-only for admins (``calls.manage_rounds``) and anyone with the view permission."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_admin(request.user) or super().has_view_permission(request, obj)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_admin(request.user) or super().has_module_permission(request)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.get_fields(request, obj)
