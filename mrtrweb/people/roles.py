"""The three kinds of people, as Django groups with permissions.

- End users answer the rounds routed to them and start calls on tools exposed to them.
- Admins see and manage every call and round (``calls.manage_rounds``).
- Operators manage server connections and what they expose (``servers.manage_connections``).

Superusers count as admins and operators.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import connections, router

# The attribute of a user object that holds the permissions read with them (:func:`_keep`).
KEPT = "mrtrweb_permissions"
# And the one that holds the answers of :func:`_has_role`.
ROLES = "mrtrweb_roles"


@dataclass(frozen=True)
class Permissions:
    """A person's permissions as ``"app.codename"``: their own, their groups', and both."""

    mine: set[str]
    theirs: set[str]
    every: set[str]


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
    them (ModelBackend reads two per person), and keep them on each user object
    (:func:`kept_permissions`), where the app's backends' ``get_user_permissions``,
    ``get_group_permissions`` and ``get_all_permissions`` answer from (``has_perm`` asks
    them; ``accounts.backends.KeptPermissions``). One request's user, or a batch of sockets'
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
        and not hasattr(user, KEPT)
    ]
    if not wanted:
        return
    ids = list({user.pk for user in wanted})
    alias = router.db_for_read(Permission)
    mine: dict[Any, set[str]] = {pk: set() for pk in ids}
    theirs: dict[Any, set[str]] = {pk: set() for pk in ids}
    with connections[alias].cursor() as cursor:
        cursor.execute(_permissions_sql(alias, len(ids)), [*ids, *ids])
        for user_id, app, codename, is_own in cursor.fetchall():
            (mine if is_own else theirs)[user_id].add(f"{app}.{codename}")
    for user in wanted:
        _keep(user, mine[user.pk], theirs[user.pk])


def _keep(user: User, mine: set[str], theirs: set[str]) -> None:
    setattr(user, KEPT, Permissions(mine, theirs, mine | theirs))


def keep_permissions(user: User, mine: set[str], theirs: set[str]) -> None:
    """Keep on ``user`` their own permissions and their groups', read some other way."""
    _keep(user, set(mine), set(theirs))


def kept_permissions(user: User | AnonymousUser, obj: Any = None) -> Permissions | None:
    """The permissions kept on ``user`` (None: none were), for a question about no object
    in particular by an active person, as ModelBackend answers from its own cache."""
    if obj is not None or not getattr(user, "is_active", False) or user.is_anonymous:
        return None
    kept: Permissions | None = getattr(user, KEPT, None)
    return kept


def keep_read_permissions(user: User, rows: Iterable[tuple[Any, Any, Any]]) -> None:
    """Keep on ``user`` the permissions read with them (:func:`person_sql`'s last columns,
    ``(app label, codename, own)``; one row of None for a person with none), as
    :func:`load_permissions` keeps them. A superuser's and an inactive person's are not kept:
    ModelBackend answers for them without their rows."""
    if not user.is_active or user.is_superuser:
        return
    mine: set[str] = set()
    theirs: set[str] = set()
    for app, codename, is_own in rows:
        if codename is not None:
            (mine if is_own else theirs).add(f"{app}.{codename}")
    _keep(user, mine, theirs)


def reads_together() -> bool:
    """Whether :func:`person_sql` can read the person with their permissions: both are in one
    database."""
    return router.db_for_read(get_user_model()) == router.db_for_read(Permission)


# The columns :func:`person_sql` reads after the person's: each permission's app label,
# codename and whether it is their own (1) or a group's (0); ``raw()`` sets them on each row.
PERMISSION_COLUMNS = ("mrtrweb_app", "mrtrweb_codename", "mrtrweb_own")


@cache
def person_sql(alias: str) -> str:
    """One statement for a person and their permissions, own and their groups' (its
    parameters: the key three times), for ``User.objects.raw``: the person's columns, then
    :data:`PERMISSION_COLUMNS`, which :func:`keep_read_permissions` takes.

    Why: every signed-in request reads its person (the sign-in backend's ``get_user``) and
    then, when the second-factor check asks whether they are an admin, their permissions: two
    statements on every page, held reload and socket opened, where one does. The
    person's row comes back once per permission (once, with no permission, when they have
    none)."""
    User = get_user_model()
    # Any: it quotes concrete fields' columns, which django-stubs types as optional.
    quote: Callable[[Any], str] = connections[alias].ops.quote_name
    table = User._meta.db_table
    selected = ", ".join(f"u.{quote(field.column)}" for field in User._meta.concrete_fields)
    app, codename, own = (quote(name) for name in PERMISSION_COLUMNS)
    mine, theirs = _permissions_sql_parts(alias)
    return (
        f"SELECT {selected}, x.app AS {app}, x.codename AS {codename}, x.own AS {own} "
        f"FROM {quote(table)} u LEFT JOIN ({mine}(%s) UNION ALL {theirs}(%s)) x ON 1 = 1 "
        f"WHERE u.{quote(User._meta.pk.column)} = %s"
    )


@cache
def _permissions_sql_parts(alias: str) -> tuple[str, str]:
    """The two halves of :func:`load_permissions`' query (a person's own permissions, their
    groups'), up to the ``IN`` list of user ids, named from the models' metadata.

    Written out rather than built with the ORM: it is asked on every signed-in request (the
    second-factor check asks whether the person is an admin), and Django compiles the union
    of two three-table joins anew each time, 30 times what the database takes to answer it
    (1.6 ms of CPU against 0.05 ms)."""
    # Any: it quotes concrete fields' columns, which django-stubs types as optional.
    quote: Callable[[Any], str] = connections[alias].ops.quote_name
    User = get_user_model()
    own = User.user_permissions.field
    grouped = User.groups.field
    group_permissions = Group.permissions.field
    permission = quote(Permission._meta.db_table)
    content_type = quote(ContentType._meta.db_table)
    permission_pk = quote(Permission._meta.pk.column)
    codename = quote(Permission._meta.get_field("codename").column)
    joins = (
        f"INNER JOIN {content_type} ct ON ct.{quote(ContentType._meta.pk.column)} = "
        f"p.{quote(Permission._meta.get_field('content_type').column)}"
    )
    app_label = quote(ContentType._meta.get_field("app_label").column)
    user_id = quote(own.m2m_column_name())
    mine = (
        f"SELECT o.{user_id}, ct.{app_label} AS app, p.{codename} AS codename, 1 AS own "
        f"FROM {quote(own.m2m_db_table())} o "
        f"INNER JOIN {permission} p ON p.{permission_pk} = o.{quote(own.m2m_reverse_name())} "
        f"{joins} WHERE o.{user_id} IN "
    )
    member = quote(grouped.m2m_column_name())
    group = quote(grouped.m2m_reverse_name())
    theirs = (
        f"SELECT m.{member}, ct.{app_label}, p.{codename}, 0 "
        f"FROM {quote(grouped.m2m_db_table())} m "
        f"INNER JOIN {quote(group_permissions.m2m_db_table())} g "
        f"ON g.{quote(group_permissions.m2m_column_name())} = m.{group} "
        f"INNER JOIN {permission} p ON p.{permission_pk} = "
        f"g.{quote(group_permissions.m2m_reverse_name())} "
        f"{joins} WHERE m.{member} IN "
    )
    return mine, theirs


def _permissions_sql(alias: str, count: int) -> str:
    """The permissions of ``count`` people, theirs (last column 1) and their groups' (0):
    one statement whose parameters are the ids twice."""
    mine, theirs = _permissions_sql_parts(alias)
    ids = "(" + ", ".join(["%s"] * count) + ")"
    return f"{mine}{ids} UNION ALL {theirs}{ids}"


def is_admin(user: User | AnonymousUser) -> bool:
    return _has_role(user, "calls.manage_rounds")


def is_operator(user: User | AnonymousUser) -> bool:
    return _has_role(user, "servers.manage_connections")


def knows_roles(user: User | AnonymousUser) -> bool:
    """Whether :func:`is_admin` and :func:`is_operator` answer for ``user`` without a query:
    their permissions were read (:func:`load_permissions`, :func:`keep_read_permissions`),
    or there are none to read (a superuser, who has every one; an inactive person, none)."""
    return (
        hasattr(user, KEPT)
        or not getattr(user, "is_active", False)
        or bool(getattr(user, "is_superuser", False))
    )


def _has_role(user: User | AnonymousUser, permission: str) -> bool:
    """``user.has_perm(permission)`` for an active person, answered once per user object.

    Why: a page asks who its person is a dozen times (the second-factor check, the header,
    the access rules), and each ``has_perm`` makes every authentication backend anew
    (``auth.get_backends``) to ask it. The answer is kept where :func:`load_permissions`
    keeps the permissions it comes from, on the same object and for as long: a request, a
    batch of socket checks; a permission taken away counts on the next one."""
    if not getattr(user, "is_active", False):
        return False
    known: dict[str, bool] | None = getattr(user, ROLES, None)
    if known is None:
        known = {}
        setattr(user, ROLES, known)
    if permission not in known:
        load_permissions(user)
        known[permission] = bool(user.has_perm(permission))
    return known[permission]


def active_usernames(limit: int = 500) -> list[str]:
    """Suggestions for the forms' user fields (a datalist; any active username is accepted),
    capped so a large site's page stays small."""
    User = get_user_model()
    return list(
        User.objects.filter(is_active=True)
        .order_by(User.USERNAME_FIELD)
        .values_list(User.USERNAME_FIELD, flat=True)[:limit]
    )
