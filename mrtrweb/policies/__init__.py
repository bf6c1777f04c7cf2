"""Approval policies: how a connection's or a tool's rounds are answered beyond one
person (renewal past the server's state lifetime, quorums, split rounds, reminders and
escalation) and people's delegations. This app holds the configuration and resolves it; the
engine (``mrtrweb.calls.engine``) carries it out from the snapshot stored on each call."""
