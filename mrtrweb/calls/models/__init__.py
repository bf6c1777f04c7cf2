"""The calls app's models, every caller imports them from here.

- ``calls_and_rounds``: ``Call`` and ``Round`` (and ``state_sha256``, what the trail and the
  logs know a ``requestState`` by);
- ``event``: the audit trail's ``Event``; ``round_part``: a split round's ``RoundPart``;
  ``vote``: a quorum round's ``Vote``;
- ``bases``: what they share; ``fields``: the JSON fields they store.
"""

from .calls_and_rounds import Call, Round, state_sha256
from .event import Event
from .round_part import RoundPart
from .vote import Vote

__all__ = ["Call", "Event", "Round", "RoundPart", "Vote", "state_sha256"]
