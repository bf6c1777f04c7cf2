"""Background entry points (django-tasks). They only call the engine, which never imports
them: ``CallsConfig.ready`` registers them with :mod:`.queue`, through which the engine
queues them by name.

Their names are stored as task paths in queued rows (``mrtrweb.calls.tasks.deliver_round``),
so they stay as they are even where the engine's verbs changed: a task queued before an
upgrade still runs after it.

``deliver_round`` resubmits answers; ``deliver_unclaimed_due`` and ``send_unsent_due`` are the
safety nets of answers and starts a web process sends itself (one each per five seconds of
them); ``watch_deliveries_due`` (attempts to deliver) and
``watch_calls_due`` (calls' first requests), one each per minute of deadlines, are enqueued to
run at a deadline (``run_after``) and do nothing for a round or call that moved on by then;
``expire_rounds_due`` runs when parked rounds' state lifetimes end: the engine enqueues one
per minute of deadlines (not one per round: a task row per parked round was a third of its
storage), and it expires every open round due by then.
``sweep_rounds`` is the safety net behind them (also ``manage.py expire_rounds``).
"""

from __future__ import annotations

from django_tasks import task

from . import engine


@task()
def deliver_round(round_id: int) -> None:
    engine.resubmit(round_id)


@task()
def deliver_unclaimed_round(round_id: int) -> None:
    """An answer its own process was to send at once, found unclaimed by
    ``deliver_unclaimed_due``: sends it only if nobody has tried yet (engine.answer)."""
    engine.resubmit(round_id, unclaimed_only=True)


@task()
def send_call(call_id: int) -> None:
    """Send a call, once: a worker's (``MRTRWEB_DELIVER_ON_ANSWER`` off), or one found unsent
    by ``send_unsent_due`` or the sweep; it sends nothing if somebody has (engine.send_call)."""
    engine.send_call(call_id)


@task()
def deliver_unclaimed_due() -> int:
    """The answers' safety net: queue the delivery of every answer its process did not try
    to send in time (one task per five seconds of answers, engine.safety_nets)."""
    return engine.deliver_unclaimed_due()


@task()
def send_unsent_due() -> int:
    """The starts' safety net: queue the sending of every call its process did not send in
    time (one task per five seconds of starts, engine.safety_nets)."""
    return engine.send_unsent_due()


@task()
def expire_round(round_id: int) -> None:
    """One round's expiry: what the engine enqueued before expire_rounds_due (kept so such
    tasks still queued run)."""
    engine.expire_if_due(round_id)


@task()
def expire_rounds_due() -> int:
    """Expire every open round whose state lifetime is over (and tell its assignees)."""
    return engine.sweep(only_expire=True)["expired"]


@task()
def renew_round(round_id: int) -> None:
    """The renewal policy: a round whose state died unanswered, its call issued again and the
    round moved onto the fresh state (claimed by the expiry task)."""
    engine.renew(round_id)


@task()
def remind_rounds_due() -> int:
    """Send the reminders and escalations due by now (the engine enqueues one per minute of
    such moments, like expire_rounds_due)."""
    return engine.remind_due()


@task()
def watch_delivery(round_id: int, attempt: int) -> None:
    """One delivery attempt's watchdog, as queued before ``watch_deliveries_due`` (rows still
    waiting run)."""
    engine.check_delivery(round_id, attempt)


@task()
def watch_deliveries_due() -> int:
    """Flag the deliveries whose sender died (one task per minute of deadlines, like
    expire_rounds_due)."""
    return engine.check_deliveries_due()


@task()
def watch_call(call_id: int) -> None:
    """One call's watchdog, as queued before ``watch_calls_due`` (rows still waiting run)."""
    engine.check_call(call_id)


@task()
def watch_calls_due() -> int:
    """Fail the calls whose sender died (one task per minute of deadlines, like
    expire_rounds_due)."""
    return engine.check_calls_due()


@task()
def watch_stream(round_id: int) -> None:
    """A question on a handshake-era call's stream: lost if the process holding the stream
    stopped beating, else looked at again later (engine.streams)."""
    engine.check_stream(round_id)


@task()
def sweep_rounds() -> dict[str, int]:
    return engine.sweep()


# What the engine queues (by these names, through .queue).
QUEUED_BY_THE_ENGINE = (
    deliver_round,
    deliver_unclaimed_round,
    send_call,
    deliver_unclaimed_due,
    send_unsent_due,
    expire_rounds_due,
    renew_round,
    remind_rounds_due,
    watch_delivery,
    watch_deliveries_due,
    watch_call,
    watch_calls_due,
    watch_stream,
)
