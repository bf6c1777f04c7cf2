"""MCP server connections, their catalogs, and the operators' console.

- ``models``: ``Connection`` (with how it authenticates, ``Connection.auth``);
- ``catalog``, ``handshake_catalog``: the cached catalog, listed with an authenticator when
  one is given; ``provide_authenticators`` is the registry through which ``authorizations``
  supplies them, since this app cannot import it;
- ``probe``, ``redaction``: every listing records the connection's last test (``tested_at``,
  ``test_failure``) in words an operator can act on, its secrets blanked;
- ``headers``: a connection's custom HTTP headers, and how they are checked;
- ``exposure``: who may start what; end users are offered only connections whose last test
  passed;
- ``forms``, ``exposure_form``, ``routing_fields``, ``views``: the console (the connection
  form, a tool's exposure row, the routing fields both use).
"""
