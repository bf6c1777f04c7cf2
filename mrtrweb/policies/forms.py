"""The operators' policy form: one connection's or one tool's, in the units people think in
(days, hours, percent), turned into a :class:`PolicySnapshot` and checked by
:func:`.validation.problems`."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .models import Policy, SplitDecline
from .snapshot import PolicySnapshot
from .validation import problems

__all__ = ["PolicyForm"]

# Where each snapshot field's problem is shown on the form.
_FIELD_OF = {
    "renew_for_seconds": "renew_for_days",
    "escalate_after_seconds": "escalate_after_hours",
}
_ROUTE = re.compile(r"^\s*(?P<key>[^=\s][^=]*?)\s*=\s*(?P<kind>user|group)\s*:\s*(?P<name>.+?)\s*$")


class PolicyForm(forms.Form):
    label_suffix = ""

    renew_expired = forms.BooleanField(
        required=False,
        label=gettext_lazy("Renew rounds whose server state expires"),
        help_text=gettext_lazy(
            "mrtrweb asks the server again with the same arguments and moves the waiting "
            "round onto the new state, so people can answer days later."
        ),
    )
    renew_unsafe = forms.BooleanField(
        required=False,
        label=gettext_lazy("Also for tools not marked read-only or idempotent"),
        help_text=gettext_lazy(
            "Each renewal runs the tool again up to its question. Only if that is harmless."
        ),
    )
    renew_for_days = forms.FloatField(
        min_value=0.01,
        max_value=90,
        initial=7,
        label=gettext_lazy("Answer within (days)"),
        help_text=gettext_lazy("The deadline people see while rounds are renewed."),
    )
    approvals_required = forms.IntegerField(
        min_value=1,
        max_value=50,
        initial=1,
        label=gettext_lazy("Approvals needed"),
        help_text=gettext_lazy("1: one person's answer is enough. More: a quorum."),
    )
    approvers_group = forms.ModelChoiceField(
        queryset=Group.objects.order_by("name"),
        required=False,
        to_field_name="name",
        label=gettext_lazy("Approvers"),
        help_text=gettext_lazy("The group whose members approve; empty: the round's routing."),
    )
    rejections_to_decline = forms.IntegerField(
        min_value=1,
        max_value=50,
        initial=1,
        label=gettext_lazy("Rejections that decline"),
    )
    allow_self_approval = forms.BooleanField(
        required=False, label=gettext_lazy("The caller may approve their own call")
    )
    split_routes = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label=gettext_lazy("Split rounds by question"),
        help_text=gettext_lazy(
            "One line per question key: budget = group:Finance, or schedule = user:ann."
        ),
    )
    split_decline = forms.ChoiceField(
        choices=SplitDecline.choices,
        initial=SplitDecline.DECLINE_ROUND,
        label=gettext_lazy("When one part is declined"),
    )
    reminders = forms.CharField(
        required=False,
        label=gettext_lazy("Reminders (percent of the answering time)"),
        help_text=gettext_lazy("For example 50, 90: an email at half time and at 90%."),
    )
    escalate_after_hours = forms.FloatField(
        required=False,
        min_value=0.01,
        label=gettext_lazy("Escalate after (hours)"),
        help_text=gettext_lazy("Unanswered this long after it was asked: hand the round on."),
    )
    escalate_user = forms.CharField(
        required=False, max_length=150, label=gettext_lazy("Escalate to the user")
    )
    escalate_group = forms.ModelChoiceField(
        queryset=Group.objects.order_by("name"),
        required=False,
        to_field_name="name",
        label=gettext_lazy("or to the group"),
    )

    def __init__(self, *args: Any, tool: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tool = tool
        self.snapshot: PolicySnapshot | None = None
        self.fields["escalate_user"].widget.attrs["list"] = "usernames"

    @classmethod
    def initial_for(cls, row: Policy | None) -> dict[str, Any]:
        if row is None:
            return {}
        return {
            "renew_expired": row.renew_expired,
            "renew_unsafe": row.renew_unsafe,
            "renew_for_days": round(row.renew_for.total_seconds() / 86400, 2),
            "approvals_required": row.approvals_required,
            "approvers_group": row.approvers_group.name if row.approvers_group else None,
            "rejections_to_decline": row.rejections_to_decline,
            "allow_self_approval": row.allow_self_approval,
            "split_routes": "\n".join(
                f"{key} = {kind}:{name}"
                for key, route in sorted((row.split_routes or {}).items())
                for kind, name in route.items()
            ),
            "split_decline": row.split_decline,
            "reminders": ", ".join(f"{round(f * 100):g}" for f in row.reminders or ()),
            "escalate_after_hours": (
                round(row.escalate_after.total_seconds() / 3600, 2) if row.escalate_after else None
            ),
            "escalate_user": row.escalate_user.get_username() if row.escalate_user else "",
            "escalate_group": row.escalate_group.name if row.escalate_group else None,
        }

    def clean_split_routes(self) -> dict[str, dict[str, str]]:
        routes: dict[str, dict[str, str]] = {}
        for number, line in enumerate(self.cleaned_data["split_routes"].splitlines(), 1):
            if not line.strip():
                continue
            match = _ROUTE.match(line)
            if match is None:
                raise forms.ValidationError(
                    _("Line %(n)d: write key = group:Name or key = user:name.") % {"n": number}
                )
            if match["key"] in routes:
                raise forms.ValidationError(
                    _("Line %(n)d: the key %(key)s is routed twice.")
                    % {"n": number, "key": match["key"]}
                )
            routes[match["key"]] = {match["kind"]: match["name"]}
        return routes

    def clean_reminders(self) -> tuple[float, ...]:
        text = self.cleaned_data["reminders"].replace("%", " ")
        try:
            shares = sorted({float(part) / 100 for part in re.split(r"[,\s]+", text) if part})
        except ValueError:
            raise forms.ValidationError(_("Percentages, separated by commas.")) from None
        return tuple(shares)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.errors:
            return data
        hours = data.get("escalate_after_hours")
        self.snapshot = PolicySnapshot(
            renew_expired=data["renew_expired"],
            renew_for_seconds=data["renew_for_days"] * 86400,
            approvals_required=data["approvals_required"],
            approvers_group=data["approvers_group"].name if data["approvers_group"] else "",
            rejections_to_decline=data["rejections_to_decline"],
            allow_self_approval=data["allow_self_approval"],
            split_routes=data["split_routes"],
            split_decline=data["split_decline"],
            reminders=data["reminders"],
            escalate_after_seconds=hours * 3600 if hours else None,
            escalate_user=data["escalate_user"].strip(),
            escalate_group=data["escalate_group"].name if data["escalate_group"] else "",
        )
        for field, message in problems(
            self.snapshot, tool=self.tool, renew_unsafe=data["renew_unsafe"]
        ).items():
            self.add_error(_FIELD_OF.get(field, field.split(".")[0]), message)
        return data

    def save(self, connection: Any, tool_name: str) -> Policy:
        assert self.snapshot is not None
        policy, data = self.snapshot, self.cleaned_data
        User = get_user_model()
        row, _created = Policy.objects.update_or_create(
            connection=connection,
            tool_name=tool_name,
            defaults={
                "renew_expired": policy.renew_expired,
                "renew_unsafe": data["renew_unsafe"],
                "renew_for": timedelta(seconds=policy.renew_for_seconds),
                "approvals_required": policy.approvals_required,
                "approvers_group": data["approvers_group"],
                "rejections_to_decline": policy.rejections_to_decline,
                "allow_self_approval": policy.allow_self_approval,
                "split_routes": dict(policy.split_routes),
                "split_decline": policy.split_decline,
                "reminders": list(policy.reminders),
                "escalate_after": (
                    timedelta(seconds=policy.escalate_after_seconds)
                    if policy.escalate_after_seconds
                    else None
                ),
                "escalate_user": (
                    User.objects.filter(**{User.USERNAME_FIELD: policy.escalate_user}).first()
                    if policy.escalate_user
                    else None
                ),
                "escalate_group": data["escalate_group"],
            },
        )
        return row
