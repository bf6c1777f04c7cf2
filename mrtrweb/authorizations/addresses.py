"""mrtrweb's own addresses in the OAuth flow: the redirect URI, the client ID metadata
document and its URL, and the one rule for where a person may be sent back to (a path of
this site only: no open redirect)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from mrtrweb import oauth

__all__ = [
    "CLIENT_NAME",
    "callback_url",
    "metadata_document",
    "metadata_document_url",
    "safe_return_to",
]

CLIENT_NAME = "mrtrweb"


def _absolute(path: str) -> str:
    return settings.MRTRWEB_BASE_URL.rstrip("/") + path


def callback_url() -> str:
    """The redirect URI: where authorization servers send people back to."""
    return _absolute(reverse("authorizations:callback"))


def metadata_document_url() -> str:
    """mrtrweb's client ID (an URL) where it publishes its client ID metadata document."""
    return _absolute(reverse("authorizations:client-metadata"))


def metadata_document() -> dict[str, Any]:
    return oauth.client_metadata_document(
        metadata_document_url(),
        redirect_uris=[callback_url()],
        client_name=CLIENT_NAME,
        client_uri=_absolute("/"),
    )


def safe_return_to(request: HttpRequest, wanted: str | None, default: str = "/") -> str:
    """``wanted`` when it is a path on this site, else ``default`` (no open redirect)."""
    if (
        wanted
        and wanted.startswith("/")
        and not wanted.startswith(("//", "/\\"))
        and url_has_allowed_host_and_scheme(
            wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return wanted
    return default
