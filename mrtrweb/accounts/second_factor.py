"""Two-step sign-in: who needs a second factor, and a person's code devices.

A person's second factor is an authenticator app (django-otp's TOTP device) with ten
single-use backup codes (a static device) made when the app is confirmed. A session counts as
verified once django-otp's ``login`` stored the device that accepted a code
(``user.is_verified()``); :mod:`.middleware` keeps everyone who must verify on the pages that
let them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django_otp import DEVICE_ID_SESSION_KEY, devices_for_user
from django_otp.models import Device
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from mrtrweb.people.roles import is_admin, is_operator

BACKUP_CODES = 10
APP_DEVICE_NAME = "Authenticator app"
BACKUP_DEVICE_NAME = "Backup codes"
# The session remembers, from sign-in on, that this person has a code device, so pages need
# no query to know whether an unverified session must stop at the code page.
CODE_PENDING = "mrtrweb.two_step_pending"

_APP_CODE = re.compile(r"^\d{6}$")


class Verifiable(Protocol):
    """The request's person as django-otp's middleware leaves them (its documented
    ``user.is_verified()``), which the user model's type does not name."""

    def is_verified(self) -> bool: ...


def is_verified(user: User | AnonymousUser) -> bool:
    """Whether this session passed a second factor (django-otp's ``user.is_verified()``; the
    request's user only, which the middleware prepared)."""
    return cast(Verifiable, user).is_verified()


def is_required(user: User) -> bool:
    """Admins and operators (superusers count as both) and staff, who reach the Django admin,
    must verify every session with a second factor; others may."""
    return bool(
        getattr(user, "is_active", False)
        and (user.is_superuser or user.is_staff or is_admin(user) or is_operator(user))
    )


def session_passed(session: Mapping[str, Any], user: User) -> bool:
    """Whether a session of ``user`` may be used as far as the second factor goes: it passed
    one (the device django-otp's ``login`` stored is still this person's and confirmed), or
    it needs none. For code that reads a session without ``OTPMiddleware`` (websockets), by
    the rule :mod:`.middleware` applies to pages."""
    device_id = session.get(DEVICE_ID_SESSION_KEY)
    if isinstance(device_id, str) and device_id:
        device = Device.from_persistent_id(device_id)
        if device is not None and device.user_id == user.pk and device.confirmed:
            return True
    return not (session.get(CODE_PENDING) or is_required(user))


def has_code_device(user: User) -> bool:
    return TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def app_device(user: User) -> TOTPDevice | None:
    return TOTPDevice.objects.filter(user=user, confirmed=True).first()


def backup_codes_left(user: User) -> int:
    return StaticToken.objects.filter(device__user=user, device__confirmed=True).count()


def enrolment_device(user: User) -> TOTPDevice:
    """The unconfirmed app device this person is enrolling, made on first asking.

    Kept until confirmed, so reloading the enrolment page shows the same secret as the app
    scanned."""
    device = TOTPDevice.objects.filter(user=user, confirmed=False).order_by("pk").first()
    return device or TOTPDevice.objects.create(user=user, name=APP_DEVICE_NAME, confirmed=False)


@dataclass(frozen=True)
class Checked:
    """The device that took a code, or why none did (``wait_until`` when throttled)."""

    device: Device | None
    wait_until: datetime | None = None


def normalise(code: str) -> str:
    """What a person typed, as the devices compare it: no spaces or dashes, lower case."""
    return re.sub(r"[\s-]+", "", code).lower()


def check_code(user: User, code: str) -> Checked:
    """Try ``code`` on this person's devices: six digits on the app, anything else as a
    backup code (which is used up). Each wrong code makes that device wait longer before the
    next try (django-otp's throttling: 1, 2, 4, ... seconds)."""
    code = normalise(code)
    model = TOTPDevice if _APP_CODE.match(code) else StaticDevice
    return _check(model.objects.filter(user=user, confirmed=True), code)


def confirm_enrolment(device: TOTPDevice, code: str) -> Checked:
    """Confirm the app device being enrolled with a code it shows."""
    return _check(TOTPDevice.objects.filter(pk=device.pk, confirmed=False), code)


def _check(devices: Any, code: str) -> Checked:
    wait_until = None
    # Rows locked, so two tries at once cannot both spend a backup code or a time step.
    with transaction.atomic():
        for device in devices.select_for_update():
            allowed, why = device.verify_is_allowed()
            if not allowed:
                wait_until = (why or {}).get("locked_until")
                continue
            if device.verify_token(normalise(code)):
                return Checked(device)
    return Checked(None, wait_until)


@transaction.atomic
def finish_enrolment(device: TOTPDevice) -> list[str]:
    """Make the confirmed app this person's only one and give them fresh backup codes."""
    TOTPDevice.objects.filter(user_id=device.user_id).exclude(pk=device.pk).delete()
    device.confirmed = True
    device.name = APP_DEVICE_NAME
    device.save(update_fields=["confirmed", "name"])
    return new_backup_codes(device.user)


@transaction.atomic
def new_backup_codes(user: User) -> list[str]:
    """Replace this person's backup codes with BACKUP_CODES new ones (shown once: only the
    person's page ever has them in clear)."""
    StaticDevice.objects.filter(user=user).delete()
    device = StaticDevice.objects.create(user=user, name=BACKUP_DEVICE_NAME, confirmed=True)
    codes: set[str] = set()
    while len(codes) < BACKUP_CODES:
        codes.add(StaticToken.random_token())
    StaticToken.objects.bulk_create(StaticToken(device=device, token=code) for code in codes)
    return sorted(codes)


@transaction.atomic
def remove_devices(user: User) -> int:
    """Every second-factor device of this person, gone (turning it off, or a lost phone).
    Returns how many were removed."""
    removed = 0
    for device in list(devices_for_user(user, confirmed=None)):
        device.delete()
        removed += 1
    return removed
