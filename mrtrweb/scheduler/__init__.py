"""The scheduler: everything that happens later, done by one poller in every worker.

Rows hold when they next need looking at (a round's ``expires_at``, ``remind_at`` and
``watch_at``, a stream round's heartbeat, a call's ``watch_at``, a webhook delivery's
``next_attempt_at``). About once a second (``MRTRWEB_SCHEDULER_INTERVAL``) the poller
(:mod:`.poller`) claims what is due, in batches, with the same guarded transitions as the
rest of the engine (``SKIP LOCKED`` on PostgreSQL), and does it: expiry, reminders and
escalation, watchdogs, the sends a process that died left undone, webhook retries. Any
number of pollers may run at once; each thing is done once.

Every worker runs it: ``manage.py db_worker`` (this app's command wraps django-tasks-db's,
:mod:`.management.commands.db_worker`) and the web process's in-process worker
(``mrtrweb.live.worker``). ``manage.py run_scheduler`` runs it alone (``--once``: one tick).
"""
