"""Websocket routes (mounted by ``mrtrweb/asgi.py``)."""

from django.urls import path

from .consumers import CallConsumer, InboxConsumer

websocket_urlpatterns = [
    path("ws/calls/<int:call_id>/", CallConsumer.as_asgi()),
    path("ws/inbox/", InboxConsumer.as_asgi()),
]
