"""The MCP client against real peers on loopback (fastmcp and the official SDK).

Wire-level claims are checked on what the peer recorded, not on what the client
believes it sent. The peers run in processes of their own (``fastmcp_process_peer``): the
client's transport, its streams and timeouts over a socket, is what these tests prove.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types
import pytest

from mrtrweb.mcp import (
    ConnectionSettings,
    InvalidRequestState,
    MCPClient,
    MissingClientCapability,
    drive_rounds,
)
from mrtrweb.mcp.headers import encode_header_value

pytestmark = pytest.mark.asyncio


def client_for(url: str, **settings: Any) -> MCPClient:
    return MCPClient(ConnectionSettings(url=url, **settings))


def last_call(peer: Any, since: int, method: str = "tools/call") -> dict[str, Any]:
    calls = [r for r in peer.recorded(since) if (r["json"] or {}).get("method") == method]
    assert calls, f"the peer recorded no {method}"
    return calls[-1]


def header(record: dict[str, Any], name: str) -> str | None:
    values = [v for k, v in record["headers"] if k == name.lower()]
    return values[-1] if values else None


def text_of(result: mcp_types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    return block.text


def accept(content: dict[str, Any]) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="accept", content=content)


# -- the envelope and headers --------------------------------------------------------------


async def test_every_request_carries_the_envelope_and_standard_headers(
    fastmcp_process_peer: Any,
) -> None:
    since = fastmcp_process_peer.mark()
    async with client_for(fastmcp_process_peer.url, headers={"X-Team": "blue"}) as client:
        await client.discover()
        await client.list_tools(use_cache=False)
        await client.call_tool("echo", {"text": "hi"})
    records = [r for r in fastmcp_process_peer.recorded(since) if r["json"]]
    assert [r["json"]["method"] for r in records][:1] == ["server/discover"]
    for record in records:
        body = record["json"]
        meta = body["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {
            "elicitation": {"form": {}, "url": {}}
        }
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "mrtrweb"
        assert header(record, "MCP-Protocol-Version") == "2026-07-28"
        assert header(record, "Mcp-Method") == body["method"]
        assert "application/json" in header(record, "Accept")
        assert "text/event-stream" in header(record, "Accept")
        assert header(record, "X-Team") == "blue"
        assert header(record, "Mcp-Session-Id") is None
    assert header(records[-1], "Mcp-Name") == "echo"


async def test_a_non_ascii_tool_name_travels_in_the_base64_sentinel(
    fastmcp_process_peer: Any,
) -> None:
    since = fastmcp_process_peer.mark()
    async with client_for(fastmcp_process_peer.url) as client:
        result = await client.call_tool("héllo_wörld", {"name": "Zoë"})
    assert isinstance(result, mcp_types.CallToolResult)
    assert not result.is_error
    assert "Zoë" in text_of(result)
    record = last_call(fastmcp_process_peer, since)
    assert header(record, "Mcp-Name") == encode_header_value("héllo_wörld")
    assert header(record, "Mcp-Name").startswith("=?base64?")


async def test_x_mcp_header_arguments_are_mirrored_and_invalid_tools_dropped(
    fastmcp_process_peer: Any,
) -> None:
    async with client_for(fastmcp_process_peer.url) as client:
        listing = await client.list_tools(use_cache=False)
        names = {tool.name for tool in listing.items}
        dropped = {name for name, _ in listing.dropped}
        assert {"bad_header_number", "bad_header_array", "bad_header_token"} <= dropped
        assert not dropped & names
        assert "route_request" in names
        since = fastmcp_process_peer.mark()
        result = await client.call_tool(
            "route_request", {"region": "eu-west", "priority": 7, "dry_run": True}
        )
    assert isinstance(result, mcp_types.CallToolResult)
    assert not result.is_error, text_of(result)
    record = last_call(fastmcp_process_peer, since)
    assert header(record, "Mcp-Param-Region") == "eu-west"
    assert header(record, "Mcp-Param-Priority") == "7"
    assert header(record, "Mcp-Param-Dry-Run") == "true"


async def test_a_resumed_round_in_a_fresh_client_mirrors_headers_from_the_given_tool(
    fastmcp_process_peer: Any,
) -> None:
    async with client_for(fastmcp_process_peer.url) as lister:
        listing = await lister.list_tools(use_cache=False)
    tool = next(t for t in listing.items if t.name == "route_request")
    since = fastmcp_process_peer.mark()
    # A new process knows the tool only from the cached catalog.
    async with client_for(fastmcp_process_peer.url) as client:
        await client.call_tool("route_request", {"region": "Zürich"}, tool=tool)
    record = last_call(fastmcp_process_peer, since)
    assert header(record, "Mcp-Param-Region") == encode_header_value("Zürich")
    assert header(record, "Mcp-Param-Priority") is None


async def test_a_stale_schema_is_repaired_by_relisting_once(fastmcp_process_peer: Any) -> None:
    # Without a listing the client cannot mirror the Region header; the server
    # answers -32020 and the client re-lists, then resends with the header.
    since = fastmcp_process_peer.mark()
    async with client_for(fastmcp_process_peer.url) as client:
        result = await client.call_tool("route_request", {"region": "eu-west"})
    assert isinstance(result, mcp_types.CallToolResult)
    methods = [(r["json"] or {}).get("method") for r in fastmcp_process_peer.recorded(since)]
    assert methods.count("tools/call") in (1, 2)
    if methods.count("tools/call") == 2:
        assert "tools/list" in methods
    assert header(last_call(fastmcp_process_peer, since), "Mcp-Param-Region") == "eu-west"


# -- listings ------------------------------------------------------------------------------


async def test_listings_follow_every_page(fastmcp_process_peer: Any, sdk_peer: Any) -> None:
    for peer in (fastmcp_process_peer, sdk_peer):
        since = peer.mark()
        async with client_for(peer.url) as client:
            tools = await client.list_tools(use_cache=False)
            prompts = await client.list_prompts(use_cache=False)
            resources = await client.list_resources(use_cache=False)
            templates = await client.list_resource_templates(use_cache=False)
        pages = [r for r in peer.recorded(since) if (r["json"] or {}).get("method") == "tools/list"]
        assert len(pages) > 1, "the peer is set up to paginate"
        assert len({t.name for t in tools.items}) == len(tools.items)
        assert {"plain_prompt", "greeting_prompt", "summary_prompt"} <= {
            p.name for p in prompts.items
        }
        assert len(resources.items) >= 3
        assert len(templates.items) >= 3
        cursors = [r["json"]["params"].get("cursor") for r in pages]
        assert cursors[0] is None and all(isinstance(c, str) for c in cursors[1:])


# -- complete results, progress, errors ----------------------------------------------------


async def test_tool_failures_stay_results(fastmcp_process_peer: Any) -> None:
    async with client_for(fastmcp_process_peer.url) as client:
        result = await client.call_tool("fail", {})
    assert isinstance(result, mcp_types.CallToolResult)
    assert result.is_error


@pytest.mark.parametrize("peer_name", ["fastmcp_process_peer", "sdk_peer_sse"])
async def test_progress_arrives_over_sse_before_the_result(
    peer_name: str, request: pytest.FixtureRequest
) -> None:
    peer = request.getfixturevalue(peer_name)
    seen: list[mcp_types.ServerNotification] = []
    async with client_for(peer.url) as client:
        result = await client.call_tool(
            "slow_progress", {"steps": 3, "delay": 0.05}, on_notification=seen.append
        )
    assert isinstance(result, mcp_types.CallToolResult)
    progress = [n for n in seen if isinstance(n, mcp_types.ProgressNotification)]
    assert [p.params.progress for p in progress] == sorted(p.params.progress for p in progress)
    assert len(progress) == 3


# -- rounds ----------------------------------------------------------------------------------


async def test_one_round_then_complete_with_typed_answers(fastmcp_process_peer: Any) -> None:
    async with client_for(fastmcp_process_peer.url) as client:
        first = await client.call_tool("approve_deploy", {"service": "api"})
        assert isinstance(first, mcp_types.InputRequiredResult)
        assert set(first.input_requests or {}) == {"approval"}
        assert first.request_state
        answers = {
            "approval": accept(
                {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops", "qa"]}
            )
        }
        since = fastmcp_process_peer.mark()
        final = await client.call_tool(
            "approve_deploy",
            {"service": "api"},
            input_responses=answers,
            request_state=first.request_state,
        )
    assert isinstance(final, mcp_types.CallToolResult)
    assert not final.is_error, text_of(final)
    assert final.structured_content["status"] == "deployed"
    retry = last_call(fastmcp_process_peer, since)["json"]
    assert retry["params"]["requestState"] == first.request_state
    assert retry["params"]["inputResponses"]["approval"]["content"]["replicas"] == 3


async def test_retries_keep_arguments_byte_exact_and_use_fresh_ids(
    fastmcp_process_peer: Any,
) -> None:
    # Odd spacing and key order: re-serialising would change the server's digest.
    arguments = '{ "quantity" : 2,"item":"tea"  }'
    since = fastmcp_process_peer.mark()
    async with client_for(fastmcp_process_peer.url) as client:
        first = await client.call_tool("purchase", arguments)
        assert isinstance(first, mcp_types.InputRequiredResult)
        second = await client.call_tool(
            "purchase",
            arguments,
            input_responses={"shipping": accept({"address": "1 Main St", "express": True})},
            request_state=first.request_state,
        )
        assert isinstance(second, mcp_types.InputRequiredResult)
        assert set(second.input_requests or {}) == {"payment"}
        final = await client.call_tool(
            "purchase",
            arguments,
            input_responses={"payment": accept({"confirm": True, "coupon": "TEN"})},
            request_state=second.request_state,
        )
    assert isinstance(final, mcp_types.CallToolResult)
    assert "Purchased 2 x tea" in text_of(final)
    calls = [r for r in fastmcp_process_peer.recorded(since) if (r["json"] or {}).get("method")]
    calls = [r for r in calls if r["json"]["method"] == "tools/call"]
    assert len(calls) == 3
    assert all(f'"arguments":{arguments}' in r["body"] for r in calls)
    assert len({json.dumps(r["json"]["id"]) for r in calls}) == 3
    # Only the newest round is answered.
    assert set(calls[2]["json"]["params"]["inputResponses"]) == {"payment"}
    assert "requestState" not in calls[0]["json"]["params"]


async def test_no_state_is_sent_when_the_server_gave_none(fastmcp_process_peer: Any) -> None:
    async with client_for(fastmcp_process_peer.url) as client:
        first = await client.call_tool("stateless_confirm", {})
        assert isinstance(first, mcp_types.InputRequiredResult)
        assert first.request_state is None
        final = await client.call_tool(
            "stateless_confirm",
            {},
            input_responses={"confirm": accept({"ok": True})},
            request_state=first.request_state,
        )
    assert isinstance(final, mcp_types.CallToolResult)
    assert final.structured_content["confirmed"] is True
    assert final.structured_content["had_request_state"] is False


async def test_state_only_rounds_and_two_requests_in_one_round_are_driven(
    fastmcp_process_peer: Any,
) -> None:
    async with client_for(fastmcp_process_peer.url) as client:
        polled = await drive_rounds(
            lambda responses, state: client.call_tool(
                "wait_for_job", {"polls": 3}, input_responses=responses, request_state=state
            ),
            lambda key, request: accept({}),
        )
        asked: list[str] = []

        def answer(key: str, request: Any) -> mcp_types.ElicitResult:
            asked.append(key)
            return accept({"name": "Bo"} if key == "name" else {"color": "green"})

        both = await drive_rounds(
            lambda responses, state: client.call_tool(
                "two_questions", {}, input_responses=responses, request_state=state
            ),
            answer,
        )
    assert isinstance(polled, mcp_types.CallToolResult)
    assert polled.structured_content == {"status": "finished", "polls": 3}
    assert isinstance(both, mcp_types.CallToolResult)
    assert text_of(both) == "Bo likes green"
    assert sorted(asked) == ["color", "name"]


async def test_sdk_resolvers_ask_two_rounds(sdk_peer: Any) -> None:
    asked: list[str] = []

    def answer(key: str, request: Any) -> mcp_types.ElicitResult:
        asked.append(key)
        schema = request.params.requested_schema
        props = schema["properties"] if isinstance(schema, dict) else schema.properties
        name = next(iter(props))
        return accept({name: 41 if "age" in key else "Bo"})

    async with client_for(sdk_peer.url) as client:
        result = await drive_rounds(
            lambda responses, state: client.call_tool(
                "greet", {"city": "Oslo"}, input_responses=responses, request_state=state
            ),
            answer,
        )
    assert isinstance(result, mcp_types.CallToolResult)
    assert not result.is_error, text_of(result)
    assert len(asked) == 2


async def test_decline_and_cancel_send_no_content(fastmcp_process_peer: Any) -> None:
    for action in ("decline", "cancel"):
        since = fastmcp_process_peer.mark()
        async with client_for(fastmcp_process_peer.url) as client:
            first = await client.call_tool("approve_deploy", {"service": "db"})
            assert isinstance(first, mcp_types.InputRequiredResult)
            final = await client.call_tool(
                "approve_deploy",
                {"service": "db"},
                input_responses={"approval": mcp_types.ElicitResult(action=action)},
                request_state=first.request_state,
            )
        assert isinstance(final, mcp_types.CallToolResult)
        sent = last_call(fastmcp_process_peer, since)["json"]["params"]["inputResponses"][
            "approval"
        ]
        assert sent == {"action": action}


async def test_prompts_and_resources_can_ask_too(fastmcp_process_peer: Any) -> None:
    async with client_for(fastmcp_process_peer.url) as client:
        prompt = await client.get_prompt("review_prompt", {"topic": "tests"})
        assert isinstance(prompt, mcp_types.InputRequiredResult)
        key, request = next(iter((prompt.input_requests or {}).items()))
        props = request.params.requested_schema
        props = props["properties"] if isinstance(props, dict) else props.properties
        field, spec = next(iter(props.items()))
        value = (spec.get("enum") or [c["const"] for c in spec.get("oneOf", [])] or ["x"])[0]
        done = await client.get_prompt(
            "review_prompt",
            {"topic": "tests"},
            input_responses={key: accept({field: value})},
            request_state=prompt.request_state,
        )
        assert isinstance(done, mcp_types.GetPromptResult)
        assert done.messages

        resource = await client.read_resource("peer://vault/secret")
        assert isinstance(resource, mcp_types.InputRequiredResult)
        key, request = next(iter((resource.input_requests or {}).items()))
        props = request.params.requested_schema
        props = props["properties"] if isinstance(props, dict) else props.properties
        answer = {
            name: (True if spec.get("type") == "boolean" else "x") for name, spec in props.items()
        }
        read = await client.read_resource(
            "peer://vault/secret",
            input_responses={key: accept(answer)},
            request_state=resource.request_state,
        )
        assert isinstance(read, mcp_types.ReadResourceResult)
        assert read.contents


async def test_a_tampered_state_is_reported_as_invalid_request_state(
    fastmcp_process_peer: Any,
) -> None:
    async with client_for(fastmcp_process_peer.url) as client:
        first = await client.call_tool("approve_deploy", {"service": "api"})
        assert isinstance(first, mcp_types.InputRequiredResult)
        state = first.request_state
        assert state
        tampered = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
        with pytest.raises(InvalidRequestState):
            await client.call_tool(
                "approve_deploy",
                {"service": "api"},
                input_responses={"approval": accept({"approve": True})},
                request_state=tampered,
            )
        # The same state with changed arguments is just as dead.
        with pytest.raises(InvalidRequestState):
            await client.call_tool(
                "approve_deploy",
                {"service": "other"},
                input_responses={"approval": accept({"approve": True})},
                request_state=state,
            )


async def test_an_expired_state_is_reported_as_invalid_request_state(
    short_ttl_process_peer: Any,
) -> None:
    import asyncio

    async with client_for(short_ttl_process_peer.url) as client:
        first = await client.call_tool("approve_deploy", {"service": "api"})
        assert isinstance(first, mcp_types.InputRequiredResult)
        await asyncio.sleep(3)
        with pytest.raises(InvalidRequestState):
            await client.call_tool(
                "approve_deploy",
                {"service": "api"},
                input_responses={
                    "approval": accept({"approve": True, "replicas": 1, "window": "now"})
                },
                request_state=first.request_state,
            )


async def test_a_server_needing_an_undeclared_capability_says_so(fastmcp_process_peer: Any) -> None:
    form_only = mcp_types.ClientCapabilities(
        elicitation=mcp_types.ElicitationCapability(form=mcp_types.FormElicitationCapability())
    )
    async with client_for(fastmcp_process_peer.url, capabilities=form_only) as client:
        with pytest.raises(MissingClientCapability) as caught:
            await client.call_tool("url_login", {})
    required = caught.value.required_capabilities
    assert required is not None and required.elicitation is not None
    assert required.elicitation.url is not None
