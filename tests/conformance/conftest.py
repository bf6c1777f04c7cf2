import pytest

# scenario -> (checks passed, checks judged), filled by test_conformance.test_scenario.
CHECK_TOTALS = pytest.StashKey[dict[str, tuple[int, int]]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "conformance: runs the official MCP conformance suite (Node 22, var/node) against "
        "mrtrweb's client",
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The totals the issue asks for: checks passed per group of scenarios."""
    totals = terminalreporter.config.stash.get(CHECK_TOTALS, {})
    if not totals:
        return
    groups = {
        "core scenarios": [s for s in totals if not s.startswith("auth/")],
        "auth scenarios (2026-07-28)": [
            s for s in totals if s.startswith("auth/") and "client-credentials" not in s
        ],
        "client-credentials extension": [s for s in totals if "client-credentials" in s],
    }
    terminalreporter.section("MCP conformance suite")
    for name, scenarios in groups.items():
        if not scenarios:
            continue
        passed = sum(totals[s][0] for s in scenarios)
        judged = sum(totals[s][1] for s in scenarios)
        terminalreporter.write_line(
            f"{name}: {passed}/{judged} checks passed in {len(scenarios)} scenarios"
        )
