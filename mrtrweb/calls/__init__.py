"""Calls and their rounds: the models, the engine that moves them, and the pages that show them.

Its rooms, each importing only those after it (the ``calls-rooms`` contract in pyproject.toml):

- ``pages/``: the call and round pages (``views``), thin: parse, authorise, render;
- ``tasks``: the background entry points, which only call the engine; ``receivers``: what this
  app does when other apps announce something;
- ``engine/``: the one state machine of a call and its rounds, behind its front door
  (``engine.answer(...)``); only it changes a status;
- ``emails/``: what the engine tells people (a round waits, expired, reminders, escalation);
- ``presenting/``: how calls and rounds read, for the pages, the API, the inbox, the admins'
  pages and the emails (a round, its policies, a server's content, outcomes, the trail);
- ``access/``: who may see a call and answer its rounds (the one place the pages ask), who is
  asked (``routing``), and the same rules in plain functions (``rules``), the reference the
  property tests hold ``access`` and ``engine.quorum`` to;
- ``handoff``: the delivery threads of the process that took an answer or started a call, and
  the handshake-era conversations on the shared loop; ``queue``: how the engine queues tasks
  by name; ``signals``: ``call_event`` (after commit) and ``call_progress``, for live pages
  and webhooks;
- ``models/``: ``Call``, ``Round``, ``Event``, ``RoundPart``, ``Vote``, imported from
  ``calls.models``.
"""
