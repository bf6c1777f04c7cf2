"""What every page's header needs: the person's roles and how many rounds wait for them."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from mrtrweb.calls.access import routed_to
from mrtrweb.calls.models import Round
from mrtrweb.calls.roles import is_admin, is_operator


def people(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "is_admin_role": is_admin(user),
        "is_operator_role": is_operator(user),
        # Lazy: evaluated only where the template shows it.
        "inbox_count": lambda: (
            Round.objects.filter(status=Round.Status.PENDING)
            .filter(routed_to(user))
            .exclude(unsupported_reason__gt="")
            .count()
        ),
    }
