"""Websocket routes (mounted by ``mrtrweb/asgi.py``)."""

from typing import Any

from django.urls import path

from .consumers import CallConsumer, InboxConsumer

# Django's path() routes ASGI apps here (channels' URLRouter reads them); django-stubs types
# its target as a view.
websocket_urlpatterns: list[Any] = [
    path("ws/calls/<int:call_id>/", CallConsumer.as_asgi()),  # type: ignore[arg-type]
    path("ws/inbox/", InboxConsumer.as_asgi()),  # type: ignore[arg-type]
]
