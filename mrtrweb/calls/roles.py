"""Moved to :mod:`mrtrweb.people.roles` (below servers and calls, which both ask it).

Kept only while branches written before the move (calls/views.py among them) are merged:
delete it once nothing imports ``mrtrweb.calls.roles`` (``grep -rn calls.roles mrtrweb tests``).
"""

from mrtrweb.people.roles import ADMINS, END_USERS, OPERATORS, ensure_roles, is_admin, is_operator

__all__ = ["ADMINS", "END_USERS", "OPERATORS", "ensure_roles", "is_admin", "is_operator"]
