"""The pages of calls and rounds: thin (parse, authorise, render), they ask ``calls.access``
and change state only through the engine's front door.

- ``views``: the round page, retrying a delivery, claiming and releasing a group's round;
- ``call_views``: the list of calls, a call's page, and starting one again;
- ``round_approvals``: what the round page shows of a quorum (the proposal, the votes);
- ``url_consent``: which URL-mode questions a person agreed to open, kept in their session;
- ``refresh``: whether something is on its way, and when a page without JavaScript reloads;
- ``watching``: holding a request while a call moves on (``live:next``, the API's ``?wait=``).
"""
