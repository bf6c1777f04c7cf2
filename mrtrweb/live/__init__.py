"""Live pages (docs/architecture.md, "Live updates").

- ``consumers``, ``routing``: the websocket consumers (``/ws/calls/<id>/``, ``/ws/inbox/``);
- ``origins``: the origin check of their handshakes;
- ``checks``, ``batch``: who may hear an event, for a batch of sockets at once;
- ``events``: the publisher subscribed to ``calls.signals.call_event`` and ``call_progress``;
- ``frames``: the HTML frames the sockets send;
- ``views``: ``live:next``, the newest round waiting for a person;
- ``signouts``: a person's sockets closed when they sign out or are deactivated;
- ``layers``, ``redis_layer``: the channel layers;
- ``worker``: the in-process task worker of the embedded default, and the ASGI lifespan.

Live never changes a call: it reads, and asks the views to fetch again.
"""
