"""OAuth authorizations of MCP server connections: who connected which account, and the tokens.

The protocol (discovery, registration, PKCE, token requests) is ``mrtrweb.oauth``, which knows
nothing of Django; this app keeps its outcomes in the database, encrypted, and serves the pages
people and operators connect and disconnect accounts with.
"""
