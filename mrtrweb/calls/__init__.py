"""Calls and their rounds: the models, the engine that moves them, and the pages that show them.

- ``models``: ``Call`` and ``Round``, and the models kept beside them re-exported, so every
  caller imports them all from there (``event_model``: the audit trail's ``Event``;
  ``round_part_model``: a split round's ``RoundPart``; ``vote_model``: a quorum round's
  ``Vote``; what they share is in ``model_bases``, so none imports ``models`` back);
- ``engine/``: the one state machine of a call and its rounds, behind its front door
  (``engine.answer(...)``); only it changes a status;
- ``tasks``: the background entry points, which only call the engine; ``queue``: how the
  engine queues them by name; ``handoff``: the delivery threads of the process that took an
  answer or started a call, and the handshake-era conversations on the shared loop;
- ``signals``: ``call_event`` (after commit) and ``call_progress``, for live pages and webhooks;
  ``receivers``: what this app does when other apps announce something;
- who is asked and who may act: ``routing`` (the asked person or group, and their delegate while
  they are away), ``access`` (the one place the pages ask who may see and answer), ``rules``
  (the same rules in plain functions, the reference the property tests hold ``access`` and
  ``engine.quorum`` to);
- the pages: ``views``, and how calls and rounds read: ``presenting`` (a round, the one
  presenter every reader uses), ``presenting_policies``, ``round_approvals``, ``call_outcomes``
  (what came of a call), ``trail`` (the audit trail as read), ``rendering`` (what a server sent,
  made safe), ``waiting``, ``page_refresh``, ``url_consent``, ``watching`` (a request held
  while a call moves on), ``when`` (times in the reader's zone), ``digests`` (a
  ``requestState``'s digest as pages show it);
- the emails: ``notify`` (a round waits for you), ``reminder_emails`` (reminders, escalation).
"""
