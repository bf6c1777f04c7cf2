"""What the engine announces, for the parts that react to it (live pages, webhooks).

Receivers run after the change is committed, in whatever process made it (a web process
or a task worker), so they must be quick and must not raise into the engine: use
``send_robust`` semantics and hand slow work to a task.
"""

from __future__ import annotations

from django.dispatch import Signal

# Sent once per audit event, after its transaction commits, with keyword arguments:
#   call_id: int, round_id: int | None, kind: str (the Event kind, e.g. "round_parked",
#   "answered", "delivered", "completed", "failed", "expired", ...), detail: dict,
#   started_by_id: int (who started the call, so receivers need not look it up),
#   call_finished: bool (whether the call is finished once this event is committed).
call_event = Signal()

# Sent (``asend_robust``, on the event loop of the request) while a server works on a call and
# streams ``notifications/progress``, at most every
# :data:`mrtrweb.calls.engine.progress.ANNOUNCE_EVERY` per request, with keyword arguments:
#   call_id: int, progress: float, total: float | None, message: str,
#   at: float (``time.time()`` when it was announced).
# Not committed anywhere first: the latest is also kept on ``Call.progress``, about once a
# second. The live pages subscribe (``LiveConfig.ready``); the engine never imports them.
call_progress = Signal()
