"""`Client` and `AsyncClient` against the real gateway: typed answers, batches in order, definitions, the registry
(a fetched spec registers again unchanged), review, tokens (data, admin and review), and request errors as
GatewayError."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from conftest import ADMIN_TOKEN, DATA_TOKEN, REVIEW_TOKEN
from support import unique

import toolgate
from toolgate import ErrorKind, ToolStatus

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
    "additionalProperties": False,
}


def weather_tool(client, grpc_tools, **extra) -> str:
    name = unique("weather")
    client.register_tool(
        {
            "name": name,
            "description": "Forecast for a city.",
            "input_schema": SCHEMA,
            "backend": grpc_tools.route(
                name,
                lambda a: {
                    "content": f"sunny in {a['city']}",
                    "structured": {"city": a["city"], "days": a.get("days", 1)},
                },
            ),
            **extra,
        }
    )
    return name


def test_execute_answers_typed_messages(client, grpc_tools):
    name = weather_tool(client, grpc_tools)

    ok = client.execute(name, {"city": "Oslo", "days": "3"}, id="c1", context={"user_id": "u1", "session_id": "s1"})
    assert isinstance(ok, toolgate.ToolMessage)
    assert (ok.tool_call_id, ok.name, ok.status, ok.ok) == ("c1", name, ToolStatus.SUCCESS, True)
    assert (ok.content, ok.structured, ok.error) == ("sunny in Oslo", {"city": "Oslo", "days": 3}, None)
    assert ok.repairs == (toolgate.Repair(rule="string_to_integer", path="/days", before='"3"', after="3"),)
    assert ok.arguments == {"city": "Oslo", "days": 3} and ok.attempts == 1
    assert grpc_tools.received(name)[-1].context["session_id"] == "s1"

    bad = client.execute(name, {"city": "Oslo", "days": "two"}, id="c2")
    assert (bad.status, bad.ok) == (ToolStatus.ERROR, False)
    assert isinstance(bad.error, toolgate.ToolError)
    assert (bad.error.kind, bad.error.model_fixable, bad.error.retryable) == (ErrorKind.INVALID_ARGUMENTS, True, False)
    assert [v.instance_path for v in bad.error.violations] == ["/days"]
    assert isinstance(bad.error.violations[0], toolgate.Violation)
    assert bad.error.original_arguments == '{"city": "Oslo", "days": "two"}'

    missing = client.execute(name[:-1], '{"city": "Oslo"}')
    assert missing.error.kind is ErrorKind.TOOL_NOT_FOUND and missing.error.suggestions == (name,)


def test_raw_arguments_text_is_sent_as_written_and_repaired(client, grpc_tools):
    name = weather_tool(client, grpc_tools)

    message = client.execute(f"functions.{name}", "{'city': 'Oslo', 'days': '2',}", id="raw")

    assert message.ok, message
    assert message.name == name
    assert {r.rule for r in message.repairs} >= {"tool_name_prefix", "json_syntax", "string_to_integer"}
    assert grpc_tools.received(name)[-1].args == {"city": "Oslo", "days": 2}


def test_execute_batch_answers_in_call_order(client, grpc_tools):
    name = weather_tool(client, grpc_tools)
    calls = [{"id": f"b{i}", "name": name, "args": {"city": city}} for i, city in enumerate(["Oslo", "Rome", "Lima"])]
    calls.append({"id": "b3", "name": name, "arguments": '{"city": 7}'})

    messages = client.execute_batch(calls, context=toolgate.CallContext(user_id="u1"))

    assert [m.tool_call_id for m in messages] == ["b0", "b1", "b2", "b3"]
    assert [m.content for m in messages[:3]] == ["sunny in Oslo", "sunny in Rome", "sunny in Lima"]
    assert messages[3].ok, '7 is repaired to "7"'


def test_definitions_leave_injected_parameters_out(client, grpc_tools):
    name = weather_tool(client, grpc_tools, inject=[{"param": "days", "from": "literal:2"}])

    openai = next(d for d in client.definitions() if d["function"]["name"] == name)
    assert openai["type"] == "function" and openai["function"]["description"] == "Forecast for a city."
    assert list(openai["function"]["parameters"]["properties"]) == ["city"]
    anthropic = next(d for d in client.definitions("anthropic") if d["name"] == name)
    assert list(anthropic["input_schema"]["properties"]) == ["city"]
    with pytest.raises(ValueError, match="format"):
        client.definitions("yaml")


def test_the_registry_round_trips_a_spec(client, http_tools):
    name = unique("transfer")
    spec = {
        "name": name,
        "description": "Moves money.",
        "input_schema": {
            "type": "object",
            "properties": {"amount": {"type": "integer"}, "user_id": {"type": "string"}},
            "required": ["amount", "user_id"],
        },
        "backend": http_tools.route(name, lambda a: (200, {"ok": True})),
        "inject": [{"param": "user_id", "from": "user_id"}],
        "repair": {"aliases": {"sum": "amount"}, "enabled": True},
        "limits": {"rate": "10/m", "key": "USER", "timeout_ms": 5000},
        "budget": {"max_consecutive_failures": 3},
        "review": {"required": True},
        "labels": {"team": "payments"},
    }

    registered = client.register_tool(spec)
    assert registered["version"] == 1
    assert client.register_tool(spec)["version"] == 2, "registering again replaces and bumps the version"
    got = client.get_tool(name)
    assert got["input_schema"] == spec["input_schema"] and got["inject"] == spec["inject"]
    assert (got["limits"]["rate"], got["limits"]["key"], got["limits"]["timeout_ms"]) == ("10/m", "USER", 5000)
    assert got["repair"] == {"aliases": {"sum": "amount"}, "drop_unknown": False, "enabled": True}
    assert (got["review"], got["budget"]["max_consecutive_failures"], got["labels"]) == (
        {"required": True},
        3,
        {"team": "payments"},
    )
    # What get_tool answers registers again as it is: the same definition, the next version.
    again = client.register_tool(got)
    assert again["version"] == got["version"] + 1 == 3
    assert {k: v for k, v in client.get_tool(name).items() if k != "version"} == {
        k: v for k, v in got.items() if k != "version"
    }
    # A spec with no limits.key (the default), or with the UNSPECIFIED an unknown value reads as, registers too.
    plain = client.register_tool({**spec, "name": unique("default_key"), "limits": {"rate": "5/s"}})
    assert plain["limits"]["key"] == "TOOL", "the gateway answers the default it applies"
    assert client.register_tool(plain)["limits"] == plain["limits"]
    unspecified = client.register_tool({**plain, "limits": {**plain["limits"], "key": "UNSPECIFIED"}})
    assert (unspecified["version"], unspecified["limits"]) == (3, plain["limits"])
    assert name in [t["name"] for t in client.list_tools()]
    client.delete_tool(name)
    with pytest.raises(toolgate.GatewayError) as gone:
        client.get_tool(name)
    assert gone.value.code is grpc.StatusCode.NOT_FOUND


def test_bad_specs_are_refused(client):
    with pytest.raises(ValueError, match="unknown spec fields"):
        client.register_tool(
            {"name": "x", "input_schema": {"type": "object"}, "backend": {"worker": {}}, "inputSchema": {}}
        )
    with pytest.raises(toolgate.GatewayError) as refused:
        client.register_tool(
            {
                "name": "bad schema",
                "input_schema": {"type": "object"},
                "backend": {"http": {"url": "http://127.0.0.1:1/x"}},
            }
        )
    assert refused.value.code is grpc.StatusCode.INVALID_ARGUMENT


def test_review_through_the_client(client, grpc_tools):
    name = weather_tool(client, grpc_tools, review={"required": True})
    ctx = {"user_id": "u9", "session_id": "review-session"}

    pending = client.execute(name, {"city": "Oslo"}, id="rv1", context=ctx, review_mode="defer")
    assert (pending.status, pending.pending_review) == (ToolStatus.PENDING_REVIEW, True)
    (waiting,) = [p for p in client.list_pending() if p.call_id == "rv1"]
    assert isinstance(waiting, toolgate.PendingReview)
    assert (waiting.tool, waiting.args, waiting.user_id, waiting.session_id) == (
        name,
        {"city": "Oslo"},
        "u9",
        "review-session",
    )

    assert (waiting.decided_by, waiting.decided_ms) == ("", 0), "pending: nobody decided yet"
    decided = client.decide("rv1", "edit", arguments={"city": "Bergen", "days": 2}, reviewer="Ana\nReviewer")
    assert decided.call_id == "rv1"
    assert decided.decided_by == "AnaReviewer", "kept as one line, under the reviewer's name"
    assert decided.decided_ms >= decided.created_ms > 0
    outcome = client.execute(name, {"city": "Oslo"}, id="rv1", context=ctx, review_mode="defer")
    assert (outcome.status, outcome.structured) == (ToolStatus.SUCCESS, {"city": "Bergen", "days": 2})
    with pytest.raises(toolgate.GatewayError) as twice:
        client.decide("rv1", "approve")
    assert twice.value.code is grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(ValueError, match="action"):
        client.decide("rv1", "maybe")


def test_policy_rules_deny_or_send_to_review_by_what_a_call_says(client, grpc_tools):
    policy = [
        {
            "name": "long-range",
            "when": "has(args.days) && args.days > 7",
            "action": "review",
            "message": "Forecasts past a week need a person's approval.",
        },
        {
            "name": "no-atlantis",
            "when": "args.city == 'Atlantis'",
            "action": "deny",
            "message": "Atlantis is not a city: ask the user for a real one.",
            "model_fixable": True,
        },
    ]
    name = weather_tool(client, grpc_tools, policy=policy)
    got = client.get_tool(name)["policy"]
    assert [r["name"] for r in got] == ["long-range", "no-atlantis"]
    assert (got[0]["action"], got[0]["on_error"], got[1]["model_fixable"]) == ("review", "deny", True)
    ctx = {"user_id": "u1", "session_id": "rules"}
    assert client.execute(name, {"city": "Oslo", "days": 3}, context=ctx).status is ToolStatus.SUCCESS
    denied = client.execute(name, {"city": "Atlantis"}, context=ctx)
    assert (denied.error.kind, denied.content) == (ErrorKind.POLICY_DENIED, policy[1]["message"])
    assert denied.error.model_fixable
    waiting = client.execute(name, {"city": "Oslo", "days": 10}, id="rules-1", context=ctx, review_mode="defer")
    assert waiting.status is ToolStatus.PENDING_REVIEW
    (pending,) = [p for p in client.list_pending() if p.call_id == "rules-1"]
    assert (pending.rule, pending.rule_message) == ("long-range", policy[0]["message"])
    with pytest.raises(ValueError, match="action"):
        client.register_tool(
            {
                "name": unique("x"),
                "input_schema": SCHEMA,
                "backend": {"worker": {}},
                "policy": [{"name": "r", "when": "true", "action": "maybe"}],
            }
        )
    with pytest.raises(toolgate.GatewayError) as refused:
        weather_tool(client, grpc_tools, policy=[{"name": "r", "when": "args.days >", "action": "deny"}])
    assert refused.value.code is grpc.StatusCode.INVALID_ARGUMENT and "line 1" in refused.value.details


def test_a_gateway_on_a_unix_socket(tmp_path):
    from conftest import Gateway, gateway_binary

    socket = tmp_path / "gw.sock"
    gw = Gateway(gateway_binary(), tmp_path / "unix", listen=f"unix:{socket}")
    try:
        gw.wait_healthy()
        with toolgate.Client(f"unix:{socket}", token=DATA_TOKEN, admin_token=ADMIN_TOKEN) as unix_client:
            name = unique("over_uds")
            unix_client.register_tool({"name": name, "input_schema": SCHEMA, "backend": {"worker": {}}})
            assert name in [t["name"] for t in unix_client.list_tools()]
            answer = unix_client.execute(name, {"city": "Oslo"})
            assert answer.error.kind is ErrorKind.UNAVAILABLE, "reached the gateway: no worker serves the tool"
    finally:
        gw.stop()
    assert not socket.exists(), "the gateway removes its socket when it stops"


def test_tokens_close_each_plane(gateway, grpc_tools, client):
    name = weather_tool(client, grpc_tools)
    with toolgate.Client(gateway.target, timeout=10) as anonymous:
        with pytest.raises(toolgate.GatewayError) as refused:
            anonymous.execute(name, {"city": "Oslo"})
        assert refused.value.code is grpc.StatusCode.UNAUTHENTICATED
        assert refused.value.method == "Execute"
    with toolgate.Client(gateway.target, token=DATA_TOKEN, timeout=10) as data_only:
        assert data_only.execute(name, {"city": "Oslo"}).ok
        with pytest.raises(toolgate.GatewayError) as admin:
            data_only.list_pending()
        assert admin.value.code is grpc.StatusCode.UNAUTHENTICATED
    with toolgate.Client(f"http://{gateway.target}", token=DATA_TOKEN, admin_token=ADMIN_TOKEN) as both:
        assert both.execute(name, {"city": "Oslo"}).ok and isinstance(both.list_pending(), list)
    # An agent's client: the review token opens ToolReview, and nothing else.
    with toolgate.Client(gateway.target, token=DATA_TOKEN, review_token=REVIEW_TOKEN, timeout=10) as agent:
        assert agent.execute(name, {"city": "Oslo"}).ok and isinstance(agent.list_pending(), list)
        with pytest.raises(toolgate.GatewayError) as registry:
            agent.list_tools()
        assert registry.value.code is grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(toolgate.GatewayError) as decided:
            agent.decide("never-filed", "approve")
        assert decided.value.code is grpc.StatusCode.NOT_FOUND, "authenticated: the call id is unknown"
    with toolgate.Client(gateway.target, token=REVIEW_TOKEN, timeout=10) as review_only:
        with pytest.raises(toolgate.GatewayError) as data:
            review_only.execute(name, {"city": "Oslo"})
        assert data.value.code is grpc.StatusCode.UNAUTHENTICATED


def test_an_unreachable_gateway_raises_unavailable():
    with toolgate.Client("127.0.0.1:1", timeout=2) as nowhere, pytest.raises(toolgate.GatewayError) as down:
        nowhere.execute("anything", {})
    assert down.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_the_async_client_mirrors_the_sync_one(gateway, grpc_tools, client):
    name = weather_tool(client, grpc_tools, review={"required": True})
    plain = unique("weather_async")

    async def scenario():
        async with toolgate.AsyncClient(
            gateway.target, token=DATA_TOKEN, admin_token=ADMIN_TOKEN, timeout=10
        ) as aclient:
            registered = await aclient.register_tool(
                {
                    "name": plain,
                    "input_schema": SCHEMA,
                    "backend": grpc_tools.route(plain, lambda a: {"content": f"rain in {a['city']}"}),
                }
            )
            one = await aclient.execute(plain, {"city": "Oslo"}, id="a1")
            batch = await aclient.execute_batch(
                [
                    {"id": "a2", "name": plain, "args": {"city": "Rome"}},
                    {"id": "a3", "name": plain, "args": {"town": "Rome"}},
                ]
            )
            definitions = await aclient.definitions("json-schema")
            pending = await aclient.execute(name, {"city": "Oslo"}, id="a4", review_mode="defer")
            waiting = [p.call_id for p in await aclient.list_pending()]
            await aclient.decide("a4", "reject", feedback="Not today.")
            rejected = await aclient.execute(name, {"city": "Oslo"}, id="a4", review_mode="defer")
            tools = [t["name"] for t in await aclient.list_tools()]
            await aclient.delete_tool(plain)
            with pytest.raises(toolgate.GatewayError):
                await aclient.get_tool(plain)
            return registered, one, batch, definitions, pending, waiting, rejected, tools

    registered, one, batch, definitions, pending, waiting, rejected, tools = asyncio.run(scenario())

    assert registered["version"] == 1 and plain in tools
    assert (one.ok, one.content) == (True, "rain in Oslo")
    assert [m.tool_call_id for m in batch] == ["a2", "a3"]
    assert batch[1].error.kind is ErrorKind.INVALID_ARGUMENTS
    assert any(d["name"] == plain for d in definitions)
    assert pending.pending_review and "a4" in waiting
    assert (rejected.error.kind, rejected.content) == (ErrorKind.REJECTED, "Not today.")


def test_a_batch_answer_larger_than_grpcs_default_cap_arrives(client, grpc_tools):
    name = unique("big")
    client.register_tool(
        {
            "name": name,
            "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "backend": grpc_tools.route(name, lambda a: {"content": "x" * 3_000_000}),
        }
    )

    messages = client.execute_batch([{"id": f"big{i}", "name": name, "args": {"n": i}} for i in range(2)])

    assert [len(m.content) for m in messages] == [3_000_000, 3_000_000]
