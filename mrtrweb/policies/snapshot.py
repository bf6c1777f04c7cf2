"""A call's policy as it was when the call started: plain JSON stored on ``Call.policy``,
so a policy edited later never changes a call in flight. The engine reads it through
:class:`PolicySnapshot`; nothing else parses that JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

__all__ = ["PolicySnapshot"]


@dataclasses.dataclass(frozen=True)
class PolicySnapshot:
    renew_expired: bool = False
    # Renew although the tool declares neither readOnlyHint nor idempotentHint.
    renew_unsafe: bool = False
    renew_for_seconds: float = 7 * 24 * 3600.0
    approvals_required: int = 1
    approvers_group: str = ""  # a group's name; "" = the round's own routing
    rejections_to_decline: int = 1
    allow_self_approval: bool = False
    # {"<key>": {"user": "<username>"} | {"group": "<name>"}}
    split_routes: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)
    split_decline: str = "decline-round"
    reminders: tuple[float, ...] = ()
    escalate_after_seconds: float | None = None
    escalate_user: str = ""  # username
    escalate_group: str = ""  # group name

    @property
    def quorum(self) -> bool:
        return self.approvals_required > 1

    @property
    def split(self) -> bool:
        return bool(self.split_routes)

    def to_json(self) -> dict[str, Any]:
        """Only what differs from "no policy": most calls store ``{}``."""
        default = PolicySnapshot()
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value != getattr(default, field.name):
                out[field.name] = list(value) if isinstance(value, tuple) else value
        if "split_routes" in out:
            out["split_routes"] = {k: dict(v) for k, v in self.split_routes.items()}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> PolicySnapshot:
        data = dict(data or {})
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        if "reminders" in kwargs:
            kwargs["reminders"] = tuple(float(x) for x in kwargs["reminders"])
        return cls(**kwargs)
