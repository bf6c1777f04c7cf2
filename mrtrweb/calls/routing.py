"""Who is asked when a call needs input: whom the call names, else the tool's policy, else
the connection's."""

from __future__ import annotations

from typing import Any

from mrtrweb.servers.models import Routing, ToolExposure

from .models import Call


def route(call: Call) -> tuple[Any, Any]:
    """``(user, group)`` to assign a new round of ``call`` to; exactly one is set."""
    if call.route_user_id is not None:
        return call.route_user, None
    if call.route_group_id is not None:
        return None, call.route_group
    policy: Any = call.connection
    if call.method == Call.Method.TOOL:
        override = (
            ToolExposure.objects.filter(connection=call.connection, tool_name=call.target)
            .exclude(routing="")
            .select_related("route_user", "route_group")
            .first()
        )
        if override is not None:
            policy = override
    if policy.routing == Routing.USER and policy.route_user is not None:
        return policy.route_user, None
    if policy.routing == Routing.GROUP and policy.route_group is not None:
        return None, policy.route_group
    # The default, and the fallback when a named user or group was deleted.
    return call.started_by, None
