"""The site's frame: what every page shares, and what is no app's own.

- ``views``: the home page, ``/healthz``, ``/readyz`` (``readiness``), ``/favicon.ico``;
- ``errors``: the site's own 403, 404 and 500 pages (the reason the code gave, a way back; the
  500 page renders without the database);
- ``context_processors``: what every page's header needs (roles, the rounds waiting);
- ``log_filters``, ``logging_json``, ``event_log``: the one-line log of a 4xx, JSON log lines,
  the one line per engine event;
- ``signin_limits``: django-axes' handler and the lockout page;
- ``templatetags/site_nav``: the header menu's links, reversed once per URL configuration and
  script prefix, and its ``aria-current``;
- ``request_threads``: the reused threads the served app runs Django's HTTP requests in;
- ``templating``: Django's template backend, with a lone surrogate a server sent shown as
  U+FFFD, so a page always encodes;
- ``templates/mrtrweb/form.html``: the fields of the round and start forms (here because
  Django's form renderer reads app directories);
- commands: ``ensure_admin`` bootstraps the site; ``mcp_conformance_client`` drives the client
  headless for the conformance suite.
"""
