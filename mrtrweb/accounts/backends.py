"""Signing in with a password: Django's ``ModelBackend``, the person read back on every
signed-in request in one statement with their permissions (``people.roles.person_sql``, run
through the documented ``Manager.raw``).

Why: every page, websocket and held reload reads its person by the key the session holds;
through the ORM that read costs more CPU than the database takes to answer it, and the
permissions the second-factor check then asks for would be a second statement. Everything
else (passwords, active accounts only, what a permission grants) is ``ModelBackend``'s own.

Sessions signed in before this backend name Django's: :data:`DJANGOS` is read as this one
(:mod:`mrtrweb.accounts.sessions`), so nobody is signed out by the change.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db import router

from mrtrweb.people import roles

__all__ = ["DJANGOS", "OURS", "AccountBackend"]

# The paths a session stores (``BACKEND_SESSION_KEY``).
DJANGOS = "django.contrib.auth.backends.ModelBackend"
OURS = "mrtrweb.accounts.backends.AccountBackend"


class KeptPermissions:
    """A ``ModelBackend``'s permission questions answered from the permissions read with the
    person (``people.roles.kept_permissions``), through the documented backend methods; when
    none were read, ModelBackend's own answer, kept the same way for the next question."""

    def get_user_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        kept = roles.kept_permissions(user_obj, obj)
        return kept.mine if kept is not None else super().get_user_permissions(user_obj, obj)  # type: ignore[misc]

    def get_group_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        kept = roles.kept_permissions(user_obj, obj)
        return kept.theirs if kept is not None else super().get_group_permissions(user_obj, obj)  # type: ignore[misc]

    def get_all_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        kept = roles.kept_permissions(user_obj, obj)
        if kept is not None:
            return kept.every
        every: set[str] = super().get_all_permissions(user_obj, obj)  # type: ignore[misc]
        if obj is None and user_obj.is_active and not user_obj.is_anonymous:
            roles.keep_permissions(
                user_obj, self.get_user_permissions(user_obj), self.get_group_permissions(user_obj)
            )
        return every


class AccountBackend(KeptPermissions, ModelBackend):
    def get_user(self, user_id: Any) -> Any:
        # An integer key (the default model's); any other kind is Django's own way.
        if type(user_id) is not int:
            return super().get_user(user_id)
        # The person and their permissions in one statement where both live in one database:
        # the second-factor check asks every signed-in request whether they are an admin.
        if roles.reads_together():
            user = _with_permissions(user_id)
        else:
            user = get_user_model()._default_manager.filter(pk=user_id).first()
        return user if user is not None and self.user_can_authenticate(user) else None


def _with_permissions(pk: int) -> Any | None:
    """The person whose key is ``pk`` (None: there is none) with their permissions, read in
    one statement (``people.roles.person_sql``: the person's row once per permission) and
    kept where :class:`KeptPermissions` answers from."""
    User = get_user_model()
    alias = router.db_for_read(User)
    rows = list(User._default_manager.db_manager(alias).raw(roles.person_sql(alias), [pk] * 3))
    if not rows:
        return None
    read = [tuple(getattr(row, name) for name in roles.PERMISSION_COLUMNS) for row in rows]
    user = rows[0]
    for name in roles.PERMISSION_COLUMNS:
        delattr(user, name)  # not the user's own: only the permissions they make are kept
    roles.keep_read_permissions(user, read)
    return user
