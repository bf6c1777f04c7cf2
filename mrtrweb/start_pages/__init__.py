"""Starting a call from a browser.

- ``views``: the start pages: pick a connection, its catalog, the form of the picked tool,
  prompt or resource, then ``engine.start_call``;
- ``tools``: a tool's arguments form (typed fields for a flat ``inputSchema``, with the limits
  from ``elicitation.hints``; else the JSON editor);
- ``prompts``: a prompt's arguments form;
- ``uri_templates``: a resource template's (RFC 6570 by ``uritemplate``, after a check of the
  RFC's grammar).

Nothing imports this app; it calls only the engine's front door.
"""
