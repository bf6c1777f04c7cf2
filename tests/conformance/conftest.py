import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "conformance: runs the official MCP conformance suite (Node 22, var/node) against "
        "mrtrweb's client",
    )
