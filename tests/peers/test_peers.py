"""The peers behave as tests/peers/README.md says, proven with raw httpx (not mrtrweb.mcp)."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable

import httpx
import pytest

from tests.peers import wire
from tests.peers.fixtures import Peer, PeerStartError, start_peer
from tests.peers.wire import accept, call_tool, list_all, post

Factory = Callable[..., Peer]

DEPLOY_ANSWERS = {
    "approve": True,
    "replicas": 3,
    "canary_percent": 12.5,
    "window": "tonight",
    "notify": ["ops", "qa"],
    "contact": "ops@example.com",
}


def tamper(state: str) -> str:
    # Flip one character in the middle of the sealed token.
    middle = len(state) // 2
    return state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]


def assert_invalid_state(reply: wire.Reply) -> None:
    assert reply.status == 400
    assert reply.content_type == "application/json"
    assert reply.error["code"] == -32602
    assert reply.error["message"] == "Invalid or expired requestState"
    assert reply.error["data"] == {"reason": "invalid_request_state"}


# --------------------------------------------------------------------------- fastmcp peer


def test_discover(fastmcp_process_peer: Peer) -> None:
    reply = post(fastmcp_process_peer.url, "server/discover")
    assert reply.status == 200
    assert "2026-07-28" in reply.result["supportedVersions"]
    assert reply.result["resultType"] == "complete"
    assert {"ttlMs", "cacheScope"} <= reply.result.keys()


def test_fastmcp_lists_are_paginated(fastmcp_process_peer: Peer) -> None:
    tools, pages = list_all(fastmcp_process_peer.url, "tools/list", "tools")
    names = [tool["name"] for tool in tools]
    assert pages >= 5
    assert len(names) == len(set(names))
    assert {
        "echo",
        "héllo_wörld",
        "route_request",
        "nested_header",
        "bad_header_number",
        "bad_header_array",
        "bad_header_duplicate",
        "bad_header_token",
        "slow_progress",
        "approve_deploy",
        "purchase",
        "two_questions",
        "wait_for_job",
        "stateless_confirm",
        "url_login",
        "all_field_kinds",
        "never_done",
        "request_info",
    } <= set(names)
    for method, key, minimum in [
        ("prompts/list", "prompts", 4),
        ("resources/list", "resources", 5),
        ("resources/templates/list", "resourceTemplates", 4),
    ]:
        items, pages = list_all(fastmcp_process_peer.url, method, key)
        assert len(items) >= minimum
        assert pages >= 2


def test_every_page_has_cache_hints_and_the_same_scope(fastmcp_process_peer: Peer) -> None:
    first = post(fastmcp_process_peer.url, "tools/list").result
    second = post(fastmcp_process_peer.url, "tools/list", {"cursor": first["nextCursor"]}).result
    assert first["cacheScope"] == second["cacheScope"]
    assert isinstance(first["ttlMs"], int)
    assert len(first["tools"]) == 3


def test_invalid_header_annotations_are_listed_by_the_server(fastmcp_process_peer: Peer) -> None:
    from mcp.shared.inbound import find_invalid_x_mcp_header

    tools, _ = list_all(fastmcp_process_peer.url, "tools/list", "tools")
    verdicts = {t["name"]: find_invalid_x_mcp_header(t["inputSchema"]) for t in tools}
    invalid = {name for name, reason in verdicts.items() if reason is not None}
    assert invalid == {
        "bad_header_number",
        "bad_header_array",
        "bad_header_duplicate",
        "bad_header_token",
    }
    schemas = {t["name"]: t["inputSchema"] for t in tools}
    route = schemas["route_request"]["properties"]
    assert route["region"]["x-mcp-header"] == "Region"
    assert route["priority"] == {"default": 5, "type": "integer", "x-mcp-header": "Priority"}
    assert route["dry_run"]["x-mcp-header"] == "Dry-Run"
    nested = schemas["nested_header"]["properties"]["target"]["properties"]["region"]
    assert nested["x-mcp-header"] == "Target-Region"


def test_echo_and_non_ascii_tool_name(fastmcp_process_peer: Peer) -> None:
    reply = call_tool(fastmcp_process_peer.url, "echo", {"text": "Hello, 世界"})
    assert reply.status == 200
    assert reply.result["content"][0]["text"] == "Hello, 世界"

    reply = call_tool(fastmcp_process_peer.url, "héllo_wörld", {"name": "Zoë"})
    assert reply.result["content"][0]["text"] == "Héllo, Zoë!"
    sent = fastmcp_process_peer.recorded()[-1]
    assert ["mcp-name", "=?base64?aMOpbGxvX3fDtnJsZA==?="] in sent["headers"]


def test_wrong_mcp_name_is_a_header_mismatch(fastmcp_process_peer: Peer) -> None:
    reply = call_tool(
        fastmcp_process_peer.url, "echo", {"text": "x"}, headers={"Mcp-Name": "other"}
    )
    assert reply.status == 400
    assert reply.error["code"] == -32020


def test_missing_envelope_key_is_400(fastmcp_process_peer: Peer) -> None:
    payload = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
    }
    response = httpx.post(
        fastmcp_process_peer.url, json=payload, headers=wire.request_headers("tools/list", {})
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602


def test_route_request_reports_the_param_headers_it_received(fastmcp_process_peer: Peer) -> None:
    region = "eu-west"
    reply = call_tool(
        fastmcp_process_peer.url,
        "route_request",
        {"region": region, "priority": 7, "dry_run": True},
        headers={
            "Mcp-Param-Region": region,
            "Mcp-Param-Priority": "7",
            "Mcp-Param-Dry-Run": "true",
        },
    )
    structured = reply.result["structuredContent"]
    assert structured["arguments"] == {
        "region": region,
        "priority": 7,
        "dry_run": True,
        "note": "",
    }
    assert structured["mcp_param_headers"] == {
        "mcp-param-region": region,
        "mcp-param-priority": "7",
        "mcp-param-dry-run": "true",
    }


def test_fastmcp_validates_param_headers(fastmcp_process_peer: Peer) -> None:
    # The SDK transport under fastmcp walks tools/list to find the schema, then checks.
    missing = call_tool(fastmcp_process_peer.url, "route_request", {"region": "Zürich"})
    assert missing.status == 400
    assert missing.error["code"] == -32020

    encoded = "=?base64?" + base64.b64encode("Zürich".encode()).decode() + "?="
    reply = call_tool(
        fastmcp_process_peer.url,
        "route_request",
        {"region": "Zürich"},
        headers={"Mcp-Param-Region": encoded},
    )
    assert reply.status == 200
    assert reply.result["structuredContent"]["mcp_param_headers"] == {"mcp-param-region": encoded}

    # Tools with an invalid annotation are not checked: a conforming client never calls them.
    reply = call_tool(fastmcp_process_peer.url, "bad_header_number", {"amount": 1.5})
    assert reply.status == 200
    assert reply.result["content"][0]["text"] == "amount 1.5"


def test_nested_header_reports_target_region(fastmcp_process_peer: Peer) -> None:
    reply = call_tool(
        fastmcp_process_peer.url,
        "nested_header",
        {"target": {"region": "ap"}},
        headers={"Mcp-Param-Target-Region": "ap"},
    )
    assert reply.result["structuredContent"]["mcp_param_headers"] == {
        "mcp-param-target-region": "ap"
    }


def test_request_info_and_recorder_show_the_wire(fastmcp_process_peer: Peer) -> None:
    mark = fastmcp_process_peer.mark()
    reply = call_tool(
        fastmcp_process_peer.url,
        "request_info",
        headers={"X-Custom": "v1"},
        meta={"progressToken": 9},
    )
    info = reply.result["structuredContent"]
    assert info["headers"]["x-custom"] == "v1"
    assert info["headers"]["mcp-method"] == "tools/call"
    assert info["meta"]["io.modelcontextprotocol/clientInfo"] == wire.CLIENT_INFO
    assert info["meta"]["progressToken"] == 9

    recorded = fastmcp_process_peer.recorded(since=mark)
    assert len(recorded) == 1
    assert recorded[0]["json"]["params"]["name"] == "request_info"
    assert ["mcp-protocol-version", "2026-07-28"] in recorded[0]["headers"]
    assert ["x-custom", "v1"] in recorded[0]["headers"]


def test_slow_progress_streams_sse_with_a_progress_token(fastmcp_process_peer: Peer) -> None:
    reply = call_tool(
        fastmcp_process_peer.url,
        "slow_progress",
        {"steps": 3},
        meta={"progressToken": "p1", "io.modelcontextprotocol/logLevel": "info"},
    )
    assert reply.status == 200
    assert reply.content_type == "text/event-stream"
    progress = [n for n in reply.notifications if n["method"] == "notifications/progress"]
    assert [p["params"]["progress"] for p in progress] == [1, 2, 3]
    assert all(p["params"]["progressToken"] == "p1" for p in progress)
    assert progress[0]["params"] == {
        "progressToken": "p1",
        "progress": 1.0,
        "total": 3.0,
        "message": "step 1 of 3",
    }
    logs = [n for n in reply.notifications if n["method"] == "notifications/message"]
    assert len(logs) == 1 and logs[0]["params"]["level"] == "info"
    assert reply.result["content"][0]["text"] == "done after 3 steps"
    assert reply.messages[-1] is reply.final


def test_slow_progress_without_token_is_json(fastmcp_process_peer: Peer) -> None:
    reply = call_tool(fastmcp_process_peer.url, "slow_progress", {"steps": 2})
    assert reply.content_type == "application/json"
    assert reply.result["content"][0]["text"] == "done after 2 steps"


def test_approve_deploy_one_round(fastmcp_process_peer: Peer) -> None:
    url = fastmcp_process_peer.url
    first = call_tool(url, "approve_deploy", {"service": "api"})
    assert first.status == 200
    result = first.result
    assert result["resultType"] == "input_required"
    assert "ttlMs" not in result and "cacheScope" not in result
    assert list(result["inputRequests"]) == ["approval"]
    request = result["inputRequests"]["approval"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "form"
    schema = request["params"]["requestedSchema"]
    assert schema["required"] == ["approve", "replicas", "window"]
    assert {
        "approve",
        "replicas",
        "canary_percent",
        "window",
        "notify",
        "contact",
        "reason",
    } == set(schema["properties"])
    state = result["requestState"]
    assert state.startswith("v1.")

    done = call_tool(
        url,
        "approve_deploy",
        {"service": "api"},
        input_responses={"approval": accept(DEPLOY_ANSWERS)},
        request_state=state,
    )
    assert done.result["resultType"] == "complete"
    assert done.result["isError"] is False
    assert (
        done.result["content"][0]["text"] == "Deployed api to staging: 3 replicas, window tonight"
    )
    assert done.result["structuredContent"]["answers"] == DEPLOY_ANSWERS


def test_approve_deploy_decline_cancel_and_wrong_types(fastmcp_process_peer: Peer) -> None:
    url = fastmcp_process_peer.url
    args = {"service": "db", "environment": "prod"}
    state = call_tool(url, "approve_deploy", args).result["requestState"]
    for action, status in [("decline", "declined"), ("cancel", "cancelled")]:
        reply = call_tool(
            url,
            "approve_deploy",
            args,
            input_responses={"approval": {"action": action}},
            request_state=state,
        )
        assert reply.result["structuredContent"]["status"] == status
        assert reply.result["content"][0]["text"] == f"Deployment of db {status}"

    wrong = {**DEPLOY_ANSWERS, "replicas": "3"}
    reply = call_tool(
        url,
        "approve_deploy",
        args,
        input_responses={"approval": accept(wrong)},
        request_state=state,
    )
    assert reply.result["isError"] is True
    assert "replicas" in reply.result["content"][0]["text"]


def test_tampered_state_changed_arguments_and_garbage_are_rejected(
    fastmcp_process_peer: Peer,
) -> None:
    url = fastmcp_process_peer.url
    state = call_tool(url, "approve_deploy", {"service": "api"}).result["requestState"]
    answers = {"approval": accept(DEPLOY_ANSWERS)}
    assert_invalid_state(
        call_tool(
            url,
            "approve_deploy",
            {"service": "api"},
            input_responses=answers,
            request_state=tamper(state),
        )
    )
    assert_invalid_state(
        call_tool(
            url,
            "approve_deploy",
            {"service": "web"},
            input_responses=answers,
            request_state=state,
        )
    )
    assert_invalid_state(
        call_tool(url, "approve_deploy", {"service": "api"}, request_state="not-a-state")
    )
    # A state minted for one tool is not accepted by another.
    assert_invalid_state(call_tool(url, "purchase", {"service": "api"}, request_state=state))


def test_elicitation_needs_the_declared_capability(fastmcp_process_peer: Peer) -> None:
    reply = call_tool(
        fastmcp_process_peer.url, "approve_deploy", {"service": "api"}, capabilities={}
    )
    assert reply.status == 400
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    # `elicitation: {}` means form only: enough for a form, not for URL mode.
    form_only = {"elicitation": {}}
    reply = call_tool(
        fastmcp_process_peer.url, "approve_deploy", {"service": "api"}, capabilities=form_only
    )
    assert reply.result["resultType"] == "input_required"
    reply = call_tool(fastmcp_process_peer.url, "url_login", capabilities=form_only)
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}


def test_purchase_two_rounds_uses_both_answers(fastmcp_process_peer: Peer) -> None:
    url = fastmcp_process_peer.url
    args = {"item": "book", "quantity": 2}
    first = call_tool(url, "purchase", args).result
    assert list(first["inputRequests"]) == ["shipping"]
    second = call_tool(
        url,
        "purchase",
        args,
        input_responses={"shipping": accept({"address": "1 Main St", "express": True})},
        request_state=first["requestState"],
    ).result
    assert second["resultType"] == "input_required"
    assert list(second["inputRequests"]) == ["payment"]
    assert second["requestState"] != first["requestState"]
    # Only the newest round's key is answered; round 1 rides in requestState.
    final = call_tool(
        url,
        "purchase",
        args,
        input_responses={"payment": accept({"confirm": True, "coupon": "SAVE10"})},
        request_state=second["requestState"],
    ).result
    assert final["content"][0]["text"] == (
        "Purchased 2 x book, shipping to 1 Main St (express=true), coupon=SAVE10"
    )
    assert final["structuredContent"]["shipping"] == {"address": "1 Main St", "express": True}


def test_purchase_without_the_answer_asks_again(fastmcp_process_peer: Peer) -> None:
    url = fastmcp_process_peer.url
    first = call_tool(url, "purchase", {"item": "pen"}).result
    again = call_tool(url, "purchase", {"item": "pen"}, request_state=first["requestState"]).result
    assert list(again["inputRequests"]) == ["shipping"]


def test_two_questions_in_one_round(fastmcp_process_peer: Peer) -> None:
    url = fastmcp_process_peer.url
    first = call_tool(url, "two_questions").result
    assert set(first["inputRequests"]) == {"name", "color"}
    done = call_tool(
        url,
        "two_questions",
        input_responses={"name": accept({"name": "Ana"}), "color": accept({"color": "blue"})},
        request_state=first["requestState"],
    ).result
    assert done["content"][0]["text"] == "Ana likes blue"

    partial = call_tool(
        url,
        "two_questions",
        input_responses={"name": accept({"name": "Ana"})},
        request_state=first["requestState"],
    ).result
    assert list(partial["inputRequests"]) == ["color"]
    done = call_tool(
        url,
        "two_questions",
        input_responses={"color": accept({"color": "red"})},
        request_state=partial["requestState"],
    ).result
    assert done["content"][0]["text"] == "Ana likes red"


def test_wait_for_job_state_only_rounds(fastmcp_process_peer: Peer) -> None:
    url = fastmcp_process_peer.url
    reply = call_tool(url, "wait_for_job", {"polls": 2}).result
    rounds = 0
    while reply["resultType"] == "input_required":
        assert "inputRequests" not in reply
        rounds += 1
        reply = call_tool(
            url, "wait_for_job", {"polls": 2}, request_state=reply["requestState"]
        ).result
    assert rounds == 2
    assert reply["content"][0]["text"] == "job finished after 2 polls"


def test_stateless_confirm_has_no_request_state(fastmcp_process_peer: Peer) -> None:
    first = call_tool(fastmcp_process_peer.url, "stateless_confirm", {"action": "reboot"}).result
    assert "requestState" not in first
    assert list(first["inputRequests"]) == ["confirm"]
    done = call_tool(
        fastmcp_process_peer.url,
        "stateless_confirm",
        {"action": "reboot"},
        input_responses={"confirm": accept({"ok": True})},
    ).result
    assert done["content"][0]["text"] == "reboot: confirmed"
    assert done["structuredContent"]["had_request_state"] is False


def test_url_login(fastmcp_process_peer: Peer) -> None:
    url = fastmcp_process_peer.url
    first = call_tool(url, "url_login", {"provider": "github"}).result
    params = first["inputRequests"]["login"]["params"]
    assert params["mode"] == "url"
    assert params["message"] == "Sign in to github to continue"
    assert params["url"].startswith(f"{fastmcp_process_peer.base_url}/authorize?ref=")
    assert "requestedSchema" not in params and "elicitationId" not in params

    done = call_tool(
        url,
        "url_login",
        {"provider": "github"},
        input_responses={"login": {"action": "accept"}},
        request_state=first["requestState"],
    ).result
    assert done["content"][0]["text"] == "Connected to github"
    assert done["structuredContent"]["visited"] is False

    httpx.get(params["url"]).raise_for_status()
    done = call_tool(
        url,
        "url_login",
        {"provider": "github"},
        input_responses={"login": {"action": "accept"}},
        request_state=first["requestState"],
    ).result
    assert done["structuredContent"]["visited"] is True


def test_all_field_kinds_echoes_types(fastmcp_process_peer: Peer) -> None:
    url = fastmcp_process_peer.url
    first = call_tool(url, "all_field_kinds").result
    schema = first["inputRequests"]["form"]["params"]["requestedSchema"]
    assert schema["properties"]["legacy"]["enumNames"] == ["Option A", "Option B"]
    content = {"text": "hi", "count": 4, "ratio": 0.5, "agree": False, "toppings": ["ham"]}
    done = call_tool(
        url,
        "all_field_kinds",
        input_responses={"form": accept(content)},
        request_state=first["requestState"],
    ).result
    assert done["structuredContent"]["content"] == content
    assert done["structuredContent"]["types"] == {
        "text": "str",
        "count": "int",
        "ratio": "float",
        "agree": "bool",
        "toppings": "list",
    }


def test_never_done_asks_a_new_key_every_round(fastmcp_process_peer: Peer) -> None:
    url = fastmcp_process_peer.url
    reply = call_tool(url, "never_done").result
    keys = []
    for _ in range(3):
        key = next(iter(reply["inputRequests"]))
        keys.append(key)
        reply = call_tool(
            url,
            "never_done",
            input_responses={key: accept({"a": "x"})},
            request_state=reply["requestState"],
        ).result
    assert keys == ["q1", "q2", "q3"]
    assert reply["resultType"] == "input_required"


def test_prompt_asks_for_input(fastmcp_process_peer: Peer) -> None:
    params = {"name": "review_prompt", "arguments": {"topic": "cats"}}
    first = post(fastmcp_process_peer.url, "prompts/get", params).result
    assert list(first["inputRequests"]) == ["style"]
    done = post(
        fastmcp_process_peer.url,
        "prompts/get",
        {
            **params,
            "inputResponses": {"style": accept({"style": "detailed"})},
            "requestState": first["requestState"],
        },
    ).result
    assert done["messages"][0]["content"]["text"] == "Write a detailed review of cats."


def test_resource_asks_for_input(fastmcp_process_peer: Peer) -> None:
    params = {"uri": "peer://vault/secret"}
    first = post(fastmcp_process_peer.url, "resources/read", params).result
    assert list(first["inputRequests"]) == ["unlock"]
    done = post(
        fastmcp_process_peer.url,
        "resources/read",
        {
            **params,
            "inputResponses": {"unlock": accept({"acknowledge": True})},
            "requestState": first["requestState"],
        },
    ).result
    assert done["contents"][0]["text"] == "vault contents: 42"
    assert {"ttlMs", "cacheScope"} <= done.keys()
    sent = fastmcp_process_peer.recorded()[-1]
    assert ["mcp-name", "peer://vault/secret"] in sent["headers"]


def test_state_expires_on_the_short_ttl_peer(short_ttl_process_peer: Peer) -> None:
    url = short_ttl_process_peer.url
    state = call_tool(url, "approve_deploy", {"service": "api"}).result["requestState"]
    time.sleep(2.2)
    assert_invalid_state(
        call_tool(
            url,
            "approve_deploy",
            {"service": "api"},
            input_responses={"approval": accept(DEPLOY_ANSWERS)},
            request_state=state,
        )
    )


def test_state_from_another_server_is_rejected(
    fastmcp_process_peer: Peer, short_ttl_process_peer: Peer
) -> None:
    state = call_tool(fastmcp_process_peer.url, "purchase", {"item": "x"}).result["requestState"]
    assert_invalid_state(
        call_tool(short_ttl_process_peer.url, "purchase", {"item": "x"}, request_state=state)
    )


def test_restart_invalidates_state_unless_the_key_is_shared(peer_factory: Factory) -> None:
    # The same SDK boundary seals state in both peers; the lighter SDK peer restarts faster.
    def state_survives_restart(*args: str) -> bool:
        peer = peer_factory("sdk_server", "--json-response", *args)
        state = call_tool(peer.url, "greet", {"city": "Oslo"}).result["requestState"]
        peer.stop()
        again = peer_factory("sdk_server", "--json-response", *args)
        reply = call_tool(
            again.url,
            "greet",
            {"city": "Oslo"},
            input_responses={"__main__:ask_name": accept({"name": "Bo"})},
            request_state=state,
        )
        again.stop()
        return reply.status == 200

    assert not state_survives_restart()
    assert state_survives_restart("--state-key", "shared-secret")


# --------------------------------------------------------------------------- SDK peer


def test_sdk_greet_two_rounds(sdk_peer: Peer) -> None:
    url = sdk_peer.url
    first = call_tool(url, "greet", {"city": "Oslo"}).result
    assert list(first["inputRequests"]) == ["__main__:ask_name"]
    second = call_tool(
        url,
        "greet",
        {"city": "Oslo"},
        input_responses={"__main__:ask_name": accept({"name": "Bo"})},
        request_state=first["requestState"],
    ).result
    assert list(second["inputRequests"]) == ["__main__:ask_age"]
    assert second["inputRequests"]["__main__:ask_age"]["params"]["message"] == (
        "How old are you, Bo?"
    )
    final = call_tool(
        url,
        "greet",
        {"city": "Oslo"},
        input_responses={"__main__:ask_age": accept({"age": 41})},
        request_state=second["requestState"],
    ).result
    assert final["content"][0]["text"] == "Bo 41 Oslo"


def test_sdk_book_table_asks_two_keys_in_one_round(sdk_peer: Peer) -> None:
    url = sdk_peer.url
    first = call_tool(url, "book_table", {"restaurant": "Noma"}).result
    assert set(first["inputRequests"]) == {"__main__:ask_party_size", "__main__:ask_time"}
    final = call_tool(
        url,
        "book_table",
        {"restaurant": "Noma"},
        input_responses={
            "__main__:ask_party_size": accept({"people": 4}),
            "__main__:ask_time": accept({"time": "19:30"}),
        },
        request_state=first["requestState"],
    ).result
    assert final["content"][0]["text"] == "Table at Noma for 4 at 19:30"


def test_sdk_decline_is_a_result(sdk_peer: Peer) -> None:
    url = sdk_peer.url
    first = call_tool(url, "confirm_delete", {"path": "/tmp/x"}).result
    final = call_tool(
        url,
        "confirm_delete",
        {"path": "/tmp/x"},
        input_responses={"__main__:ask_confirm": {"action": "decline"}},
        request_state=first["requestState"],
    ).result
    assert final["content"][0]["text"] == "kept /tmp/x (decline)"


def test_sdk_state_checks_and_capabilities(sdk_peer: Peer) -> None:
    url = sdk_peer.url
    first = call_tool(url, "greet", {"city": "Oslo"}).result
    answers = {"__main__:ask_name": accept({"name": "Bo"})}
    assert_invalid_state(
        call_tool(
            url,
            "greet",
            {"city": "Oslo"},
            input_responses=answers,
            request_state=tamper(first["requestState"]),
        )
    )
    assert_invalid_state(
        call_tool(
            url,
            "greet",
            {"city": "Rome"},
            input_responses=answers,
            request_state=first["requestState"],
        )
    )
    reply = call_tool(url, "greet", {"city": "Oslo"}, capabilities={})
    assert reply.status == 400
    assert reply.error["code"] == -32021


def test_sdk_pagination_uses_an_empty_string_cursor(sdk_peer: Peer) -> None:
    first = post(sdk_peer.url, "tools/list").result
    assert len(first["tools"]) == 2
    assert first["nextCursor"] == ""
    tools, pages = list_all(sdk_peer.url, "tools/list", "tools")
    assert pages == 4
    assert [t["name"] for t in tools] == [
        "echo",
        "greet",
        "book_table",
        "plan_quarter",
        "confirm_delete",
        "route_request",
        "slow_progress",
        "request_info",
    ]
    for method, key in [
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ]:
        items, pages = list_all(sdk_peer.url, method, key)
        assert len(items) == 3 and pages == 2
    reply = post(sdk_peer.url, "tools/list", {"cursor": "bogus"})
    assert reply.status == 400
    assert reply.error == {"code": -32602, "message": "Invalid cursor"}


def test_sdk_validates_param_headers(sdk_peer: Peer) -> None:
    url = sdk_peer.url
    missing = call_tool(url, "route_request", {"region": "eu"})
    assert missing.status == 400
    assert missing.error["code"] == -32020
    wrong = call_tool(url, "route_request", {"region": "eu"}, headers={"Mcp-Param-Region": "us"})
    assert wrong.error["code"] == -32020
    good = call_tool(
        url,
        "route_request",
        {"region": "Zürich", "dry_run": True},
        headers={
            "Mcp-Param-Region": wire.encode_header_value("Zürich"),
            "Mcp-Param-Dry-Run": "true",
        },
    )
    assert good.status == 200
    assert good.result["structuredContent"]["mcp_param_headers"] == {
        "mcp-param-region": "=?base64?WsO8cmljaA==?=",
        "mcp-param-dry-run": "true",
    }


def test_sdk_json_mode_drops_progress(sdk_peer: Peer) -> None:
    reply = call_tool(sdk_peer.url, "slow_progress", meta={"progressToken": "t"})
    assert reply.content_type == "application/json"
    assert reply.result["content"][0]["text"] == "done after 3 steps"


def test_sdk_sse_mode_streams_progress(sdk_peer_sse: Peer) -> None:
    reply = call_tool(
        sdk_peer_sse.url,
        "slow_progress",
        {"steps": 2},
        meta={"progressToken": "t", "io.modelcontextprotocol/logLevel": "info"},
    )
    assert reply.content_type == "text/event-stream"
    methods = [n["method"] for n in reply.notifications]
    assert methods.count("notifications/progress") == 2
    assert "notifications/message" in methods
    assert reply.result["content"][0]["text"] == "done after 2 steps"
    quick = call_tool(sdk_peer_sse.url, "echo", {"text": "x"})
    assert quick.content_type == "application/json"


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize("mode", ["drop", "drop-json", "close"])
def test_broken_responses(fault_peer: Factory, mode: str) -> None:
    peer = fault_peer(mode)
    with pytest.raises(httpx.RemoteProtocolError):
        call_tool(peer.url, "echo", {"text": "x"}, meta={"progressToken": "p"})


def test_drop_sends_a_notification_before_breaking(fault_peer: Factory) -> None:
    peer = fault_peer("drop")
    payload = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {}, "_meta": wire.envelope(progressToken="p")},
    }
    headers = wire.request_headers("tools/call", payload["params"])
    received = b""
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream("POST", peer.url, json=payload, headers=headers) as response,
    ):
        assert response.headers["content-type"] == "text/event-stream"
        for data in response.iter_bytes():
            received += data
    assert b"notifications/progress" in received


def test_sse_no_result_ends_cleanly_without_a_response(fault_peer: Factory) -> None:
    reply = call_tool(fault_peer("sse-no-result").url, "echo", meta={"progressToken": "p"})
    assert reply.content_type == "text/event-stream"
    assert [m.get("method") for m in reply.messages] == ["notifications/progress"]


@pytest.mark.parametrize("mode", ["stall", "stall-sse"])
def test_stalls_time_out(fault_peer: Factory, mode: str) -> None:
    with pytest.raises(httpx.ReadTimeout):
        call_tool(fault_peer(mode).url, "echo", timeout=0.5)


@pytest.mark.parametrize(
    ("mode", "content_type", "body"),
    [
        ("garbage", "application/json", b"this is {not json"),
        ("wrong-content-type", "text/html", b"<!doctype html>"),
        ("not-jsonrpc", "application/json", b'{"hello": "world"}'),
        ("bad-sse", "text/event-stream", b"event: message\ndata: {this is not json"),
    ],
)
def test_garbage_modes(fault_peer: Factory, mode: str, content_type: str, body: bytes) -> None:
    response = httpx.post(
        fault_peer(mode).url, json={}, headers=wire.request_headers("tools/list", {})
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(content_type)
    assert response.content.startswith(body)


@pytest.mark.parametrize(
    ("mode", "framing"),
    [
        ("huge", "content-length"),
        ("huge-chunked", "transfer-encoding"),
        ("huge-sse", "transfer-encoding"),
    ],
)
def test_huge_responses(fault_peer: Factory, mode: str, framing: str) -> None:
    reply = call_tool(fault_peer(mode).url, "echo", request_id=77)
    assert framing in reply.response.headers
    assert len(reply.response.content) > 10_000_000
    assert reply.final["id"] == 77
    assert len(reply.result["content"][0]["text"]) == 12_000_000


def test_unsupported_version(fault_peer: Factory) -> None:
    reply = post(fault_peer("unsupported-version").url, "server/discover")
    assert reply.status == 400
    assert reply.error == {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": ["2027-01-01"], "requested": "2026-07-28"},
    }


def legacy_initialize(url: str) -> httpx.Response:
    payload = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": wire.CLIENT_INFO,
        },
    }
    return httpx.post(url, json=payload, headers={"Accept": wire.ACCEPT})


def test_legacy_rejects_modern_requests_and_does_initialize(fault_peer: Factory) -> None:
    peer = fault_peer("legacy")
    reply = post(peer.url, "server/discover")
    assert reply.status == 400
    assert reply.error == {"code": -32600, "message": "Bad Request: Missing session ID"}

    response = legacy_initialize(peer.url)
    assert response.status_code == 200
    session = response.headers["mcp-session-id"]
    init = wire.parse_reply(response).result
    assert init["protocolVersion"] == "2025-11-25"
    headers = {
        "Accept": wire.ACCEPT,
        "Mcp-Session-Id": session,
        "MCP-Protocol-Version": "2025-11-25",
    }
    notified = httpx.post(
        peer.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    assert notified.status_code == 202
    listed = httpx.post(
        peer.url,
        json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        headers=headers,
    )
    tools = wire.parse_reply(listed).result["tools"]
    assert {t["name"] for t in tools} == {"echo", "add", "greet"}


def test_legacy_stateless_and_32022(fault_peer: Factory) -> None:
    reply = post(fault_peer("legacy-stateless").url, "tools/list")
    assert reply.status == 400
    assert reply.error["code"] == -32600
    assert reply.error["message"].startswith(
        "Bad Request: Unsupported protocol version: 2026-07-28"
    )
    assert legacy_initialize(fault_peer("legacy-stateless").url).status_code == 200

    peer = fault_peer("legacy-32022")
    reply = post(peer.url, "server/discover")
    assert reply.status == 400
    assert reply.error["code"] == -32022
    assert reply.error["data"]["supported"] == [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
    ]
    assert legacy_initialize(peer.url).status_code == 200


def test_legacy_sse_is_the_old_http_sse_transport(fault_peer: Factory) -> None:
    peer = fault_peer("legacy-sse")
    reply = post(peer.url, "server/discover")
    assert reply.status == 405
    assert reply.response.text == "Method Not Allowed"
    assert reply.messages == []
    with httpx.stream("GET", peer.url, headers={"Accept": "text/event-stream"}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.iter_lines()
        assert next(lines) == "event: endpoint"
        assert next(lines).startswith("data: /messages/?session_id=")


def test_auth(fault_peer: Factory) -> None:
    peer = fault_peer("auth")
    reply = call_tool(peer.url, "echo", {"text": "hi"})
    assert reply.status == 401
    challenge = reply.response.headers["www-authenticate"]
    metadata_url = f"{peer.base_url}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{metadata_url}"' in challenge
    metadata = httpx.get(metadata_url).json()
    assert metadata["resource"] == peer.url

    wrong = call_tool(peer.url, "echo", {"text": "hi"}, headers={"Authorization": "Bearer nope"})
    assert wrong.status == 401
    assert 'error="invalid_token"' in wrong.response.headers["www-authenticate"]

    limited = call_tool(
        peer.url, "echo", {"text": "hi"}, headers={"Authorization": "Bearer limited"}
    )
    assert limited.status == 403
    assert 'error="insufficient_scope"' in limited.response.headers["www-authenticate"]

    good = call_tool(peer.url, "echo", {"text": "hi"}, headers={"Authorization": "Bearer secret"})
    assert good.status == 200
    assert good.result["content"][0]["text"] == "hi"
    assert len(peer.recorded()) >= 4


# --------------------------------------------------------------------------- the harness


def test_start_failure_shows_the_child_output() -> None:
    with pytest.raises(PeerStartError) as excinfo:
        start_peer("faults", "--mode", "no-such-mode", timeout=10)
    assert "invalid choice" in str(excinfo.value)


def test_stop_ends_the_process(peer_factory: Factory) -> None:
    peer = peer_factory("faults", "--mode", "stall")
    peer.stop()
    assert peer.process.poll() is not None
    with pytest.raises(httpx.ConnectError):
        httpx.post(peer.url, json={}, timeout=1)


def test_cache_hints_are_configurable(peer_factory: Factory) -> None:
    peer = peer_factory("fastmcp_server", "--cache-ttl", "60", "--cache-scope", "public")
    for method in ("server/discover", "tools/list"):
        result = post(peer.url, method).result
        assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public")
