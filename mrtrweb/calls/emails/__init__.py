"""The emails of calls and rounds, the engine sends them (never the pages).

- ``notices``: a round waits for you, a round expired, connect your account again;
- ``reminder_notices``: the reminders of a round still waiting, and escalation's notices.

Each is written in its recipient's language and time zone (``people.speaking``), from what
``calls.presenting`` says of a round, and never raises into the engine.
"""
