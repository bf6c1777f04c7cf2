"""What a start request (``POST /api/v1/calls``) is checked against, and translated into,
before its call is created: the target a method takes, the assignee or group it is routed to,
the call's own policy, the webhook's URL, and whether the caller may start that target at all,
by the start page's rules. Each refusal is an ``ApiError`` the views let through unchanged.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.urls import reverse
from pydantic.alias_generators import to_camel

from mrtrweb import webhooks
from mrtrweb.authorizations.credentials import authenticator_for
from mrtrweb.calls.models import Call
from mrtrweb.policies.snapshot import PolicySnapshot
from mrtrweb.policies.validation import problems as policy_problems
from mrtrweb.servers.catalog import ensure_catalog
from mrtrweb.servers.exposure import may_start, sees_whole_catalog
from mrtrweb.servers.models import Connection

from .problems import ApiError
from .schemas import ProblemField, StartCall


def field_error(field: str, detail: str, status: int = 422) -> ApiError:
    """A 422 (or ``status``) about one field of the body, pointed at by ``/field``."""
    return ApiError(
        status,
        detail,
        kind="invalid-body",
        errors=[ProblemField(detail=detail, pointer=f"/{field}")],
    )


def target(body: StartCall) -> str:
    """The tool's or prompt's name, or the resource's uri: the one the method takes, alone."""
    if body.method == Call.Method.RESOURCE:
        if body.name is not None:
            raise field_error("name", "resources/read takes a uri, not a name.")
        if body.arguments:
            raise field_error("arguments", "resources/read takes no arguments.")
        if body.uri is None:
            raise field_error("uri", "resources/read needs the resource's uri.")
        return body.uri
    if body.uri is not None:
        raise field_error("uri", f"{body.method} takes a name, not a uri.")
    if body.name is None:
        raise field_error("name", f"{body.method} needs the name of the tool or prompt.")
    return body.name


def routing(body: StartCall) -> tuple[Any, Any]:
    """Whom the body routes the call's rounds to: ``(user, None)``, ``(None, group)``, or
    ``(None, None)`` for the connection's own routing."""
    if body.assignee is not None and body.group is not None:
        raise field_error("group", "Name an assignee or a group, not both.")
    if body.assignee is not None:
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: body.assignee}, is_active=True).first()
        if user is None:
            raise field_error("assignee", "No active user has this username.")
        return user, None
    if body.group is not None:
        group = Group.objects.filter(name=body.group).first()
        if group is None:
            raise field_error("group", "No group has this name.")
        return None, group
    return None, None


def policy(user: User, connection: Connection, body: StartCall) -> PolicySnapshot | None:
    """The call's own policy, when the body gives one: only operators and admins may, since an
    end user's program could otherwise lift the quorum an organisation set. Checked as the
    console's form is (``policies.validation``)."""
    if body.policy is None:
        return None
    if not sees_whole_catalog(user):
        detail = "Only operators and admins may give a call its own policy."
        raise ApiError(
            403, detail, kind="forbidden", errors=[ProblemField(detail=detail, pointer="/policy")]
        )
    given = body.policy
    policy = PolicySnapshot(
        renew_expired=given.renew_expired,
        # An operator's explicit renewal is their allowance for a tool that may act, too.
        renew_unsafe=given.renew_expired,
        renew_for_seconds=float(given.renew_for_seconds),
        approvals_required=given.approvals_required,
        approvers_group=given.approvers_group or "",
        rejections_to_decline=given.rejections_to_decline,
        allow_self_approval=given.allow_self_approval,
        split_routes={
            key: route.model_dump(exclude_none=True) for key, route in given.split_routes.items()
        },
        split_decline=given.split_decline,
        reminders=tuple(sorted(set(given.reminders))),
        escalate_after_seconds=(
            float(given.escalate_after_seconds) if given.escalate_after_seconds else None
        ),
        escalate_user=given.escalate_user or "",
        escalate_group=given.escalate_group or "",
    )
    tool = connection.tool(body.name) if body.method == Call.Method.TOOL and body.name else None
    # An explicit policy from an operator is their allowance to renew, as the console's box.
    found = policy_problems(policy, tool=tool, renew_unsafe=True)
    if found:
        raise ApiError(
            422,
            "The policy cannot work: " + " ".join(found.values()),
            kind="invalid-body",
            errors=[
                ProblemField(
                    detail=message,
                    pointer="/policy/" + "/".join(to_camel(part) for part in field.split(".")),
                )
                for field, message in found.items()
            ],
        )
    return policy


def check_webhook(url: str) -> None:
    """The webhooks app's rules, which parse the URL as its sender will (a URL it could not
    use, or an address in an odd spelling, is refused here with the reason)."""
    try:
        webhooks.check_url(url)
    except webhooks.InvalidWebhookURL as exc:
        raise field_error("webhook", f"The webhook cannot be used: {exc}.") from None


def check_startable(user: User, connection: Connection, method: str, target: str) -> None:
    """The start page's rules: end users only exposed tools; prompts and resources only for
    those who see the whole catalog; tools and prompts as the (fresh) catalog lists them."""
    if method != Call.Method.TOOL and not sees_whole_catalog(user):
        raise field_error("method", "Only operators and admins get prompts or read resources.")
    if method == Call.Method.RESOURCE:
        return  # any URI: resource templates make the list open-ended; the server decides
    # Listed with the caller's own account where the server wants one (OAuth per person).
    report = ensure_catalog(connection, authenticator_for(connection, user))
    catalog = connection.catalog or {}
    listing = "tools" if method == Call.Method.TOOL else "prompts"
    names = {item.get("name") for item in catalog.get(listing) or [] if isinstance(item, dict)}
    if target not in names:
        if report is not None and report.authorization_required and not catalog:
            connect = settings.MRTRWEB_BASE_URL.rstrip("/") + reverse(
                "authorizations:connect", kwargs={"connection": connection.name}
            )
            raise ApiError(
                409,
                f"The server wants your own account: connect it once in a browser at {connect}, "
                "then start the call again.",
                kind="authorization-required",
                headers={"Link": f'<{connect}>; rel="authorize"'},
            )
        if report is not None and not report.ok and not catalog:
            raise ApiError(502, "The server's catalog could not be listed.", kind="unreachable")
        raise field_error("name", f"The server offers no {listing[:-1]} of this name to you.")
    if method == Call.Method.TOOL and not may_start(user, connection, target):
        raise field_error("name", "The server offers no tool of this name to you.")
