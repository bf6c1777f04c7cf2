"""A policy in a few words, for the console's list of tools and the API reference."""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from .snapshot import PolicySnapshot

__all__ = ["describe"]


def _duration(seconds: float) -> str:
    if seconds >= 86400 and seconds % 86400 == 0:
        days = int(seconds // 86400)
        return ngettext("%(n)d day", "%(n)d days", days) % {"n": days}
    if seconds >= 3600:
        hours = round(seconds / 3600, 1)
        return _("%(n)s h") % {"n": f"{hours:g}"}
    minutes = max(1, round(seconds / 60))
    return ngettext("%(n)d minute", "%(n)d minutes", minutes) % {"n": minutes}


def describe(policy: PolicySnapshot) -> list[str]:
    """Short labels, one a rule that is on; empty for no policy."""
    out: list[str] = []
    if policy.renew_expired:
        out.append(
            _("renews expired rounds for %(d)s") % {"d": _duration(policy.renew_for_seconds)}
        )
    if policy.quorum:
        label = _("%(n)d approvals") % {"n": policy.approvals_required}
        if policy.approvers_group:
            label += " " + _("from %(group)s") % {"group": policy.approvers_group}
        out.append(label)
    if policy.split:
        parts = ", ".join(
            f"{key} → {route.get('user') or route.get('group')}"
            for key, route in sorted(policy.split_routes.items())
        )
        out.append(_("split: %(parts)s") % {"parts": parts})
    if policy.reminders:
        shares = ", ".join(f"{round(f * 100)}%" for f in policy.reminders)
        out.append(_("reminders at %(shares)s") % {"shares": shares})
    if policy.escalate_after_seconds:
        out.append(
            _("escalates after %(d)s to %(who)s")
            % {
                "d": _duration(policy.escalate_after_seconds),
                "who": policy.escalate_user or policy.escalate_group,
            }
        )
    return out
