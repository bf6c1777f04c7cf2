"""How calls and rounds read, for every reader: the pages, the API, the inbox, the admins'
pages and the emails. Reads only; nothing here changes a call or imports the engine.

- ``rounds``: a round as a person sees it, the one presenter (sections, forms, headlines);
- ``policies``: the approval policies' side of a round (proposal, votes, comments, states);
- ``server_content``: what a server sent (results, content blocks), made safe to show;
- ``outcome_badges``: what came of a call, as one badge for every list and page;
- ``history``: a call's audit trail as read (the engine's ``trail`` writes it);
- ``authorization_wait``: a call waiting for an account to be connected again, as said.
"""
