"""Single sign-on through the organisation's OpenID Connect provider (mozilla-django-oidc).

The code flow with PKCE, a nonce and a state: ``/oidc/authenticate/`` sends the browser to the
provider, which sends it back to ``/oidc/callback/`` with a code; :class:`OidcBackend` trades
the code for tokens, checks the ID token (signature by the provider's published keys,
algorithm, issuer, audience, expiry, nonce), reads the userinfo claims, and finds the person by
the provider's ``iss`` and ``sub`` (:class:`~.models.OidcIdentity`), making an account on first
sign-in. Each sign-in sets the person's email and names from the claims and their mapped groups
(``MRTRWEB_OIDC_GROUP_MAP``): mapped groups are added and removed to match the claim, others
are left alone, and no claim makes anyone staff or superuser.

Second factor: when the ID token's ``amr`` names a second factor the site trusts
(``MRTRWEB_OIDC_MFA_AMR``, with ``MRTRWEB_OIDC_TRUST_MFA`` on), the session counts as verified
through a :class:`~.models.SingleSignOnDevice`; otherwise admins and operators still pass
their own code here (:mod:`.middleware`).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import Group, User
from django.core.exceptions import SuspiciousOperation
from django.core.signals import setting_changed
from django.db import IntegrityError, transaction
from django.dispatch import receiver
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django_otp import login as otp_login
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from mrtrweb.people import usernames

from .backends import AccountBackend, KeptPermissions
from .models import OidcIdentity, SingleSignOnDevice

log = logging.getLogger(__name__)

DISCOVERY_TTL = 3600.0  # seconds a provider's discovery document is used before reading it again
# The provider's clock and ours may differ this much (exp, iat, nbf).
LEEWAY = 60
IDP_MFA = (
    "mrtrweb_idp_mfa"  # set on the user the backend returns: the provider checked a 2nd factor
)

_ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_ISSUER": "issuer",
}


class ProviderUnavailable(Exception):
    """The provider's discovery document could not be read or lacks an endpoint."""


def enabled() -> bool:
    return bool(settings.MRTRWEB_OIDC_ENABLED)


# -- where the provider is --------------------------------------------------------------------

_discovered: dict[str, tuple[float, dict[str, Any]]] = {}
_discovery_lock = threading.Lock()


def _discovery(url: str) -> dict[str, Any]:
    with _discovery_lock:
        cached = _discovered.get(url)
        if cached and time.monotonic() - cached[0] < DISCOVERY_TTL:
            return cached[1]
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"reading {url}: {exc}") from exc
    if not isinstance(document, dict):
        raise ProviderUnavailable(f"{url} is not a discovery document")
    with _discovery_lock:
        _discovered[url] = (time.monotonic(), document)
    return document


@receiver(setting_changed)
def _forget_discovery(*, setting: str, **kwargs: object) -> None:
    # A provider configured anew is discovered anew (tests reconfigure it).
    if setting.startswith("OIDC_OP_"):
        with _discovery_lock:
            _discovered.clear()


def provider() -> dict[str, str]:
    """The provider's endpoints and issuer: those set in the environment, the rest discovered."""
    # Only asked when single sign-on is on, when env.oidc has set every one of them.
    found = {name: getattr(settings, name) for name in _ENDPOINTS}
    url = settings.OIDC_OP_DISCOVERY_URL
    if url and not all(found.values()):
        document = _discovery(url)
        for name, key in _ENDPOINTS.items():
            if not found[name]:
                found[name] = str(document.get(key) or "")
    missing = [name for name, value in found.items() if not value]
    if missing:
        raise ProviderUnavailable(f"the provider names no {', '.join(missing)}")
    found["OIDC_OP_ISSUER"] = found["OIDC_OP_ISSUER"].rstrip("/")
    return found


# -- the backend ------------------------------------------------------------------------------


class OidcBackend(KeptPermissions, OIDCAuthenticationBackend):
    """Answers only the provider's callback (a request with ``code`` and ``state``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # mozilla-django-oidc reads every setting here, for each authenticate() Django makes;
        # they are read when a callback comes instead, so the backend can stay listed when
        # single sign-on is off.
        from django.contrib.auth import get_user_model

        self.UserModel = get_user_model()

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        if request is None or not enabled() or "code" not in request.GET:
            return None
        try:
            endpoints = provider()
        except ProviderUnavailable as exc:
            log.warning("single sign-on: the provider is unavailable: %s", exc)
            return None
        self.OIDC_OP_TOKEN_ENDPOINT = endpoints["OIDC_OP_TOKEN_ENDPOINT"]
        self.OIDC_OP_USER_ENDPOINT = endpoints["OIDC_OP_USER_ENDPOINT"]
        self.OIDC_OP_JWKS_ENDPOINT = endpoints["OIDC_OP_JWKS_ENDPOINT"]
        self.issuer = endpoints["OIDC_OP_ISSUER"]
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        try:
            return super().authenticate(request, **kwargs)
        except (SuspiciousOperation, requests.RequestException, jwt.PyJWTError, ValueError) as exc:
            # Every refusal is the same "did not work" to the person; the reason is logged.
            log.warning("single sign-on refused: %s: %s", type(exc).__name__, exc)
            return None

    def get_user(self, user_id: Any) -> Any:
        # mozilla-django-oidc's reads the person whatever their state, so a person deactivated
        # after signing in with the provider kept every page until their session ran out.
        # Read as a password's sign-in is: active people only, with their permissions.
        return AccountBackend().get_user(user_id)

    def get_payload_data(self, token: bytes | str, key: Any) -> dict[str, Any]:
        """The token's claims, once its signature, algorithm, issuer, audience and times hold
        (mozilla-django-oidc checks only the signature and expiry)."""
        algorithm = jwt.get_unverified_header(token).get("alg")
        if algorithm != self.OIDC_RP_SIGN_ALGO:
            raise SuspiciousOperation(f"the token is signed with {algorithm!r}")
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=self.issuer,
                leeway=LEEWAY,
                options={"require": ["iss", "sub", "aud", "exp", "iat"]},
            )
        except jwt.PyJWTError as exc:
            raise SuspiciousOperation(f"the token does not hold: {exc}") from exc

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        claims = self.get_userinfo(access_token, id_token, payload)
        if not isinstance(claims, dict) or claims.get("sub") != payload["sub"]:
            # OpenID Connect Core 5.3.2: the userinfo must be about the ID token's subject.
            raise SuspiciousOperation("the userinfo is about someone else")
        # Claims the provider put only in the ID token (groups, often) count too.
        claims = {**payload, **claims}
        user = self._person(str(payload["sub"]), claims)
        if user is None:
            return None
        self._update(user, claims)
        setattr(user, IDP_MFA, _trusted_mfa(payload))
        return user

    def _person(self, subject: str, claims: dict[str, Any]) -> Any:
        identity = (
            OidcIdentity.objects.select_related("user")
            .filter(issuer=self.issuer, subject=subject)
            .first()
        )
        if identity is not None:
            OidcIdentity.objects.filter(pk=identity.pk).update(last_sign_in_at=timezone.now())
            return identity.user
        if not settings.MRTRWEB_OIDC_CREATE_USERS:
            log.info("single sign-on: no account for %s at %s", subject, self.issuer)
            return None
        with transaction.atomic():
            user = self.UserModel.objects.create_user(self._free_username(claims, subject))
            OidcIdentity.objects.create(
                user=user, issuer=self.issuer, subject=subject, last_sign_in_at=timezone.now()
            )
        return user

    def _free_username(self, claims: dict[str, Any], subject: str) -> str:
        """The provider's preferred username (or the email's local part) when no local account
        has it: an existing account is never taken over by a name."""
        field = self.UserModel._meta.get_field(self.UserModel.USERNAME_FIELD)
        limit = getattr(field, "max_length", None) or 150
        email = str(claims.get("email") or "")
        wanted = str(claims.get("preferred_username") or email.partition("@")[0] or subject)
        kept = "".join(c for c in usernames.normalised(wanted) if c.isalnum() or c in "@.+-_")
        base = kept[: limit - 4] or "sso"
        name, n = base, 1
        while usernames.holder(name) is not None:
            n += 1
            name = f"{base}-{n}"
        return name

    def _update(self, user: User, claims: dict[str, Any]) -> None:
        changed = []
        for field, claim in (
            ("email", "email"),
            ("first_name", "given_name"),
            ("last_name", "family_name"),
        ):
            value = claims.get(claim)
            if isinstance(value, str) and getattr(user, field) != value[:150]:
                setattr(user, field, value[:150])
                changed.append(field)
        if changed:
            user.save(update_fields=changed)
        sync_groups(user, claims)


def sync_groups(user: User, claims: dict[str, Any]) -> None:
    """Add the mapped groups the claim grants, remove the mapped ones it does not; groups that
    are not in the map are the site's own and stay as they are."""
    mapping: dict[str, list[str]] = settings.MRTRWEB_OIDC_GROUP_MAP
    if not mapping:
        return
    raw = claims.get(settings.MRTRWEB_OIDC_GROUPS_CLAIM) or []
    held = {raw} if isinstance(raw, str) else {str(g) for g in raw if isinstance(g, str | int)}
    granted = {app for idp, apps in mapping.items() if idp in held for app in apps}
    mapped = {app for apps in mapping.values() for app in apps}
    for name in sorted(mapped):
        if name in granted:
            try:
                group, _ = Group.objects.get_or_create(name=name)
            except IntegrityError:  # made meanwhile by another sign-in
                group = Group.objects.get(name=name)
            user.groups.add(group)
        else:
            user.groups.remove(*Group.objects.filter(name=name))


def _trusted_mfa(payload: dict[str, Any]) -> bool:
    if not settings.MRTRWEB_OIDC_TRUST_MFA:
        return False
    amr = payload.get("amr") or []
    methods = {amr.lower()} if isinstance(amr, str) else {str(m).lower() for m in amr}
    return bool(methods & set(settings.MRTRWEB_OIDC_MFA_AMR))


# -- the views --------------------------------------------------------------------------------


def _failed(request: HttpRequest) -> HttpResponse:
    messages.error(
        request,
        _(
            "Signing in with %(provider)s did not work. Try again, or sign in with your "
            "username and password."
        )
        % {"provider": settings.MRTRWEB_OIDC_NAME},
    )
    return HttpResponseRedirect(reverse("login"))


class OidcStart(OIDCAuthenticationRequestView):
    """Sends the browser to the provider (``?next=`` is kept for afterwards)."""

    def __init__(self, **kwargs: Any) -> None:
        # The parent reads the settings here; they are read when single sign-on is on instead.
        super(OIDCAuthenticationRequestView, self).__init__(**kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not enabled():
            raise Http404(_("Single sign-on is off."))
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider()["OIDC_OP_AUTHORIZATION_ENDPOINT"]
        except ProviderUnavailable as exc:
            log.warning("single sign-on: the provider is unavailable: %s", exc)
            return _failed(request)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class OidcCallback(OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back: signs the person in, or says it did not work."""

    def get(self, request: HttpRequest) -> HttpResponse:
        if not enabled():
            raise Http404(_("Single sign-on is off."))
        try:
            return super().get(request)
        except SuspiciousOperation as exc:  # a state this browser never started
            log.warning("single sign-on callback refused: %s", exc)
            return _failed(request)

    def login_failure(self) -> HttpResponse:
        return _failed(self.request)

    def login_success(self) -> HttpResponse:
        response = super().login_success()
        if getattr(self.user, IDP_MFA, False):
            device, _ = SingleSignOnDevice.objects.get_or_create(
                user=self.user, defaults={"name": "Single sign-on", "confirmed": True}
            )
            otp_login(self.request, device)
        return response
