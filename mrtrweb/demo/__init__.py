"""A small MCP server to try mrtrweb with: ``python -m mrtrweb.demo.server --port 8765``.

It is an example for newcomers, not a test fixture: every tool shows one way a 2026-07-28
server asks a person for input (a form, two forms in a row, a page to visit) and carries
what it learnt between rounds in a sealed ``requestState``. ``make run`` starts it and
registers it as the connection ``demo``. docs/demo.md walks through it.

It imports nothing from Django or the rest of mrtrweb: it is a separate program that only
happens to live in this repository.
"""
