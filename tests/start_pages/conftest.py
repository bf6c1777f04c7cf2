"""The start pages' tests share the calls pages' fixtures: an operator signed in, a connection
to the fastmcp peer, and the pages fetched."""

from tests.calls.conftest import ada, pages, peer_conn, web

__all__ = ["ada", "pages", "peer_conn", "web"]
