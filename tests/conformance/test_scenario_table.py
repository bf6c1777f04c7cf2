"""The conformance command's scenario table and the values it answers with (no Node needed)."""

from __future__ import annotations

import json
import socket

import mcp_types
import pytest
from django.core.management import CommandError, call_command

from mrtrweb.core.management.commands import _schema_values as schema_values
from mrtrweb.core.management.commands import mcp_conformance_client as cmd
from tests.conformance.test_conformance import SCENARIOS


def test_every_suite_scenario_has_its_own_steps() -> None:
    assert set(SCENARIOS) <= set(cmd.SCENARIOS)
    for scenario in SCENARIOS:
        assert cmd.steps_for(scenario) is cmd.SCENARIOS[scenario]


@pytest.mark.parametrize("scenario", [None, "", "no-such-scenario"])
def test_unknown_scenarios_run_the_generic_flow(scenario: str | None) -> None:
    assert cmd.steps_for(scenario) == (cmd.ListTools(), cmd.CallFirstTool())


def test_every_flow_lists_tools_before_calling_one() -> None:
    # Mcp-Param-* headers are mirrored only for tools this client has listed.
    calling = (cmd.CallTool, cmd.CallFirstTool, cmd.CallEachTool, cmd.CallContextTools)
    for steps in [*cmd.SCENARIOS.values(), cmd.GENERIC]:
        first_call = next((i for i, s in enumerate(steps) if isinstance(s, calling)), None)
        if first_call is not None:
            assert cmd.ListTools() in steps[:first_call]


def test_the_mrtr_flow_calls_another_tool_between_rounds() -> None:
    steps = cmd.steps_for("sep-2322-client-request-state")
    echo = next(
        s for s in steps if isinstance(s, cmd.CallTool) and s.name == "test_mrtr_echo_state"
    )
    assert echo.between_rounds == "test_mrtr_unrelated"


def test_context_tool_calls_keep_names_arguments_and_order() -> None:
    context = json.dumps(
        {
            "name": "http-custom-headers",
            "toolCalls": [
                {"name": "a", "arguments": {"x": " padded ", "n": None}},
                {"name": "b"},
                {"arguments": {"nameless": True}},
            ],
        }
    )
    assert cmd.context_tool_calls(context) == [("a", {"x": " padded ", "n": None}), ("b", {})]
    assert cmd.context_tool_calls(None) == []
    assert cmd.context_tool_calls('{"name": "tools_call"}') == []


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "string", "default": "Ada"}, "Ada"),
        ({"type": "integer", "default": 30}, 30),
        ({"type": "boolean", "default": False}, False),
        ({"type": "boolean"}, True),
        ({"type": "string", "enum": ["red", "green"]}, "red"),
        ({"type": "string", "oneOf": [{"const": "s", "title": "Small"}]}, "s"),
        ({"type": "integer"}, 0),
        ({"type": "integer", "minimum": 2.5, "maximum": 9}, 3),
        ({"type": "number", "minimum": 1.5}, 1.5),
        ({"type": "number", "maximum": -4}, -4),
        ({"type": "string", "format": "email"}, "user@example.com"),
        ({"type": "string", "format": "date"}, "2026-01-01"),
        ({"type": "string", "minLength": 10}, "examplexxx"),
        ({"type": "string", "maxLength": 3}, "exa"),
        ({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}, ["a"]),
        ({"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}}, ["x"]),
        ({"type": ["null", "integer"]}, 0),
        ({"type": "object"}, {}),
        ({}, "example"),
    ],
)
def test_value_for_a_schema(schema: dict, value: object) -> None:
    assert schema_values.value_for(schema) == value


def test_form_answers_fill_every_field_with_typed_values() -> None:
    request = mcp_types.ElicitRequest.model_validate(
        {
            "method": "elicitation/create",
            "params": {
                "message": "Please confirm to continue",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "confirmed": {"type": "boolean", "description": "Confirm?"},
                        "age": {"type": "integer", "minimum": 18},
                        "name": {"type": "string", "default": "John Doe"},
                        "tags": {"type": "array", "items": {"type": "string", "enum": ["t"]}},
                    },
                    "required": ["age"],
                },
            },
        }
    )
    result = schema_values.answer("confirm", request)
    assert isinstance(result, mcp_types.ElicitResult)
    assert result.model_dump(mode="json", exclude_none=True) == {
        "action": "accept",
        "content": {"confirmed": True, "age": 18, "name": "John Doe", "tags": ["t"]},
    }


def test_url_elicitations_are_declined_without_content() -> None:
    request = mcp_types.ElicitRequest.model_validate(
        {
            "method": "elicitation/create",
            "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/x"},
        }
    )
    result = schema_values.answer("visit", request)
    assert isinstance(result, mcp_types.ElicitResult)
    assert result.action == "decline"
    assert result.content is None


def test_tool_arguments_cover_required_properties_only() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "region": {"type": "string", "x-mcp-header": "Region"},
            "optional": {"type": "string"},
        },
        "required": ["a", "region", "undeclared"],
    }
    assert schema_values.tool_arguments(schema) == {
        "a": 0,
        "region": "example",
        "undeclared": "example",
    }
    assert schema_values.tool_arguments({"type": "object"}) == {}


def test_nested_objects_get_their_required_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "target": {
                "type": "object",
                "properties": {"region": {"type": "string"}, "zone": {"type": "string"}},
                "required": ["region"],
            }
        },
        "required": ["target"],
    }
    assert schema_values.tool_arguments(schema) == {"target": {"region": "example"}}


def test_the_command_declares_form_elicitation_only() -> None:
    caps = cmd.CAPABILITIES.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert caps == {"elicitation": {"form": {}}}


def test_the_command_fails_when_no_server_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port any more: discovery and the listing both fail.
    monkeypatch.delenv(cmd.SCENARIO_ENV, raising=False)
    with pytest.raises(CommandError, match="step"):
        call_command("mcp_conformance_client", f"http://127.0.0.1:{port}/mcp")
