"""The policy a new call gets: the tool's row over the connection's, field by field, and
the current delegation of a person."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from .models import Delegation, Policy
from .snapshot import PolicySnapshot

__all__ = ["delegate_of", "delegating_to", "policy_for"]


def _snapshot(row: Policy) -> dict[str, Any]:
    return PolicySnapshot(
        renew_expired=row.renew_expired,
        renew_unsafe=row.renew_unsafe,
        renew_for_seconds=row.renew_for.total_seconds(),
        approvals_required=row.approvals_required,
        approvers_group=row.approvers_group.name if row.approvers_group else "",
        rejections_to_decline=row.rejections_to_decline,
        allow_self_approval=row.allow_self_approval,
        split_routes=dict(row.split_routes or {}),
        split_decline=row.split_decline,
        reminders=tuple(float(x) for x in row.reminders or ()),
        escalate_after_seconds=(
            row.escalate_after.total_seconds() if row.escalate_after is not None else None
        ),
        escalate_user=row.escalate_user.get_username() if row.escalate_user else "",
        escalate_group=row.escalate_group.name if row.escalate_group else "",
    ).to_json()


def policy_for(connection: Any, tool_name: str | None) -> PolicySnapshot:
    """The policy of ``tool_name`` on ``connection`` (``None`` for prompts and resources,
    which follow the connection's own). A field the tool's row leaves at its default keeps
    the connection's value."""
    # Most tools have no row, nor the connection: the related group or person of a row that
    # names one is read when the snapshot asks for it.
    found = Policy.objects.filter(connection_id=connection.pk, tool_name__in=["", tool_name or ""])
    rows = {row.tool_name: row for row in found}
    merged: dict[str, Any] = {}
    if "" in rows:
        merged.update(_snapshot(rows[""]))
    if tool_name and tool_name in rows:
        merged.update(_snapshot(rows[tool_name]))
    return PolicySnapshot.from_json(merged)


def delegate_of(user: User, at: Any = None) -> Any:
    """Whom ``user``'s rounds go to now (``user`` when nobody stands in): the delegation
    that started last among those running at ``at``. Not followed further: a delegate's own
    delegation does not pass the rounds on again."""
    at = at or timezone.now()
    delegation = (
        Delegation.objects.filter(person=user, starts_at__lte=at, until__gt=at)
        .select_related("delegate")
        .order_by("-starts_at", "-pk")
        .first()
    )
    return delegation.delegate if delegation is not None and delegation.delegate.is_active else user


def delegating_to(user: User, at: Any = None) -> Any:
    """The people whose rounds ``user`` stands in for at ``at`` (a queryset of their ids, for
    a subquery): those whose current delegate (:func:`delegate_of`) ``user`` is."""
    at = at or timezone.now()
    running = Q(starts_at__lte=at, until__gt=at)
    # A later delegation of the same person to someone else wins (delegate_of's rule). Each
    # query built with one filter(): every page's inbox count asks for this one.
    later = Delegation.objects.filter(
        running
        & Q(person=OuterRef("person"))
        & (
            Q(starts_at__gt=OuterRef("starts_at"))
            | Q(starts_at=OuterRef("starts_at"), pk__gt=OuterRef("pk"))
        )
    )
    return Delegation.objects.filter(
        running & Q(delegate=user, delegate__is_active=True) & ~Exists(later)
    ).values("person")
