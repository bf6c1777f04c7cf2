"""What makes a policy impossible or unsafe, said in words: one check for the console's form
and the API's ``policy``, so both refuse the same things with the same messages."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils.translation import gettext as _

from .snapshot import PolicySnapshot

__all__ = ["MAX_RENEW_SECONDS", "problems", "renewable_tool"]

# A round renewed for longer than this is forgotten work, not an approval.
MAX_RENEW_SECONDS = 90 * 24 * 3600
MAX_REMINDERS = 5


def renewable_tool(tool: Any) -> bool:
    """Whether running ``tool`` again up to its question is safe by its own word: its
    annotations say read-only or idempotent (a ``Tool`` model or its JSON)."""
    if tool is None:
        return False
    annotations = tool.get("annotations") if isinstance(tool, dict) else tool.annotations
    if annotations is None:
        return False
    if isinstance(annotations, dict):
        return bool(annotations.get("readOnlyHint") or annotations.get("idempotentHint"))
    return bool(annotations.readOnlyHint or annotations.idempotentHint)


def _active_user(username: str) -> Any:
    User = get_user_model()
    return User.objects.filter(**{User.USERNAME_FIELD: username}, is_active=True).first()


def problems(
    policy: PolicySnapshot, *, tool: Any = None, renew_unsafe: bool = False
) -> dict[str, str]:
    """``{field: message}`` for each field of ``policy`` that cannot work (empty when it can).
    ``tool`` (when the policy is a tool's) decides whether renewal is safe; ``renew_unsafe``
    is the operator's explicit allowance."""
    found: dict[str, str] = {}
    if policy.renew_expired:
        if not 0 < policy.renew_for_seconds <= MAX_RENEW_SECONDS:
            found["renew_for_seconds"] = _("Renew for more than nothing and at most 90 days.")
        if tool is not None and not renewable_tool(tool) and not renew_unsafe:
            found["renew_expired"] = _(
                "This tool is not marked read-only or idempotent: renewing runs it again up to "
                "its question. Allow it explicitly if that is safe."
            )
    if policy.approvals_required < 1:
        found["approvals_required"] = _("At least one approval.")
    if policy.rejections_to_decline < 1:
        found["rejections_to_decline"] = _("At least one rejection.")
    if policy.approvers_group:
        group = Group.objects.filter(name=policy.approvers_group).first()
        if group is None:
            found["approvers_group"] = _("No group of this name.")
        elif policy.quorum:
            members = group.user_set.filter(is_active=True).count()
            if members < policy.approvals_required:
                found["approvals_required"] = _(
                    "The group %(group)s has %(members)d active people: %(needed)d approvals "
                    "could never be given."
                ) % {"group": group.name, "members": members, "needed": policy.approvals_required}
    for key, route in policy.split_routes.items():
        where = f"split_routes.{key}"
        if not key:
            found["split_routes"] = _("Every part needs the key of the question it routes.")
        elif not isinstance(route, dict) or len(route) != 1 or set(route) - {"user", "group"}:
            found[where] = _("Route each key to one user or one group.")
        elif "user" in route and _active_user(str(route["user"])) is None:
            found[where] = _("No active user of this name.")
        elif "group" in route and not Group.objects.filter(name=route["group"]).exists():
            found[where] = _("No group of this name.")
    if policy.split and policy.quorum:
        # A quorum approves one proposal of the whole round; a split round has no one author.
        found["split_routes"] = _("A round is split between people or needs a quorum, not both.")
    if policy.split_decline not in ("decline-round", "send-with-others"):
        found["split_decline"] = _("Choose decline-round or send-with-others.")
    if len(policy.reminders) > MAX_REMINDERS:
        found["reminders"] = _("At most five reminders.")
    elif any(not 0 < f < 1 for f in policy.reminders):
        found["reminders"] = _(
            "Each reminder is a share of the answering time, above 0 and below 100%."
        )
    if policy.escalate_user and policy.escalate_group:
        found["escalate_user"] = _("Escalate to a user or to a group, not both.")
    elif policy.escalate_after_seconds is not None:
        if policy.escalate_after_seconds <= 0:
            found["escalate_after_seconds"] = _("Escalate after more than nothing.")
        elif not (policy.escalate_user or policy.escalate_group):
            found["escalate_user"] = _("Name whom to escalate to.")
    elif policy.escalate_user or policy.escalate_group:
        found["escalate_after_seconds"] = _("Say after how long to escalate.")
    if policy.escalate_user and _active_user(policy.escalate_user) is None:
        found["escalate_user"] = _("No active user of this name.")
    if policy.escalate_group and not Group.objects.filter(name=policy.escalate_group).exists():
        found["escalate_group"] = _("No group of this name.")
    return found
