"""GatewayToolNode and the transcript: calls the gateway repaired run repaired, and the AIMessage is answered again
(same id) with the calls as they ran, unless rewriting is off; arguments that did not parse are repaired and moved
into the tool calls; tool calls that share an id are refused, and calls without one are given one the transcript
carries. A real StateGraph, gateway and tool servers, as in test_langgraph.py."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Command
from support import agent_graph, ai, call, kinds, scripted, thread, tool_messages, unique

from toolgate.langgraph import GatewayToolNode

# ---- repaired calls run repaired; the transcript shows the repaired arguments ----


def test_repairable_calls_run_repaired_and_the_transcript_shows_what_ran(client, http_tools, grpc_tools):
    click, flag = unique("click"), unique("set_dark_mode")
    client.register_tool(
        {
            "name": click,
            "description": "Clicks an element of the page.",
            "input_schema": {
                "type": "object",
                "properties": {"selector": {"type": "string"}},
                "required": ["selector"],
                "additionalProperties": False,
            },
            "repair": {"aliases": {"element": "selector"}},
            "backend": http_tools.route(click, lambda args: (200, {"clicked": args["selector"]})),
        }
    )
    client.register_tool(
        {
            "name": flag,
            "description": "Turns dark mode on or off.",
            "input_schema": {"type": "object", "properties": {"enabled": {"type": "boolean"}}, "required": ["enabled"]},
            "backend": grpc_tools.route(flag, lambda args: {"content": f"dark mode {args['enabled']}"}),
        }
    )
    as_written = ai(call(click, {"element": "myCoolButton"}), call(flag, {"enabled": "True"}))
    model = scripted(as_written, "Done.")
    graph = agent_graph(model, GatewayToolNode(client))

    out = graph.invoke({"messages": [HumanMessage("Click my button, then dark mode on")]}, thread())

    messages = out["messages"]
    assert kinds(messages) == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "AIMessage"], (
        "the AIMessage is replaced in place, not appended"
    )
    transcript = messages[1]
    assert transcript.id == as_written.id
    assert [(c["id"], c["name"], c["args"]) for c in transcript.tool_calls] == [
        (as_written.tool_calls[0]["id"], click, {"selector": "myCoolButton"}),
        (as_written.tool_calls[1]["id"], flag, {"enabled": True}),
    ]
    clicked, flagged = tool_messages(messages)
    assert (clicked.status, flagged.status) == ("success", "success")
    assert clicked.additional_kwargs["repairs"] == [
        {"rule": "alias", "path": "/selector", "before": '"element"', "after": '"selector"'}
    ]
    assert flagged.additional_kwargs["repairs"] == [
        {"rule": "string_to_boolean", "path": "/enabled", "before": '"True"', "after": "true"}
    ]
    assert [r.args for r in http_tools.received(click)] == [{"selector": "myCoolButton"}]
    assert [r.args for r in grpc_tools.received(flag)] == [{"enabled": True}]
    # The model's next turn sees the calls as they ran.
    assert [c["args"] for c in model.seen[1][1].tool_calls] == [{"selector": "myCoolButton"}, {"enabled": True}]


def test_the_transcript_is_left_alone_when_rewriting_is_off(client, http_tools):
    click = unique("click")
    client.register_tool(
        {
            "name": click,
            "input_schema": {
                "type": "object",
                "properties": {"selector": {"type": "string"}},
                "required": ["selector"],
            },
            "repair": {"aliases": {"element": "selector"}},
            "backend": http_tools.route(click, lambda args: (200, {"clicked": args["selector"]})),
        }
    )
    as_written = ai(call(click, {"element": "myCoolButton"}))
    graph = agent_graph(scripted(as_written, "Done."), GatewayToolNode(client, rewrite_transcript=False))

    out = graph.invoke({"messages": [HumanMessage("Click it")]}, thread())

    assert out["messages"][1].tool_calls[0]["args"] == {"element": "myCoolButton"}
    assert tool_messages(out["messages"])[0].status == "success"
    assert [r.args for r in http_tools.received(click)] == [{"selector": "myCoolButton"}]


def test_arguments_that_did_not_parse_are_repaired_and_moved_into_the_tool_calls(client, http_tools):
    weather = unique("get_weather")
    client.register_tool(
        {
            "name": weather,
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "backend": http_tools.route(weather, lambda args: (200, {"city": args["city"], "temp_c": 4})),
        }
    )
    good = call(weather, {"city": "Oslo"})
    broken = {
        "name": weather,
        "args": "{'city': 'Bergen',}",
        "id": "call_broken",
        "error": "bad JSON",
        "type": "invalid_tool_call",
    }
    message = AIMessage(content="", tool_calls=[good], invalid_tool_calls=[broken], id="ai_broken")
    graph = agent_graph(scripted(message, "Cold in both."), GatewayToolNode(client))

    out = graph.invoke({"messages": [HumanMessage("Weather in Oslo and Bergen?")]}, thread())

    transcript = out["messages"][1]
    assert [(c["id"], c["args"]) for c in transcript.tool_calls] == [
        (good["id"], {"city": "Oslo"}),
        ("call_broken", {"city": "Bergen"}),
    ]
    assert transcript.invalid_tool_calls == []
    answers = tool_messages(out["messages"])
    assert [(m.tool_call_id, m.status) for m in answers] == [(good["id"], "success"), ("call_broken", "success")]
    assert "json_syntax" in [r["rule"] for r in answers[1].additional_kwargs["repairs"]]
    assert sorted(r.args["city"] for r in http_tools.received(weather)) == ["Bergen", "Oslo"]


# ---- tool call ids: refused when shared, given when missing ----


def echo_tool(client, http_tools) -> str:
    name = unique("echo")
    client.register_tool(
        {
            "name": name,
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "backend": http_tools.route(name, lambda args: (200, {"echo": args["text"]})),
        }
    )
    return name


def test_two_tool_calls_with_one_id_are_refused_before_anything_runs(client, http_tools):
    name = echo_tool(client, http_tools)
    twice = ai(call(name, {"text": "a"}, id="call_same"), call(name, {"text": "b"}, id="call_same"))
    graph = agent_graph(scripted(twice, "Done."), GatewayToolNode(client))

    with pytest.raises(ValueError, match="two tool calls with the id 'call_same'"):
        graph.invoke({"messages": [HumanMessage("Echo a and b")]}, thread())

    assert http_tools.received(name) == []


def test_tool_calls_without_ids_get_unique_ones_the_transcript_carries(client, http_tools):
    name = echo_tool(client, http_tools)

    def without_ids(*texts: str) -> AIMessage:
        # What LangChain keeps from a provider that sends no ids: `id` None on each call.
        message = ai(*(call(name, {"text": t}) for t in texts))
        return message.model_copy(update={"tool_calls": [{**c, "id": None} for c in message.tool_calls]})

    first, second = without_ids("a", "b"), without_ids("c")
    graph = agent_graph(scripted(first, second, "Done."), GatewayToolNode(client))

    out = graph.invoke({"messages": [HumanMessage("Echo a, b, then c")]}, thread())

    messages = out["messages"]
    assert kinds(messages) == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    carried = [c["id"] for m in (messages[1], messages[4]) for c in m.tool_calls]
    assert (messages[1].id, messages[4].id) == (first.id, second.id), "answered again in place"
    assert all(carried) and len(set(carried)) == 3, carried
    assert [m.tool_call_id for m in tool_messages(messages)] == carried
    assert sorted(r.call_id for r in http_tools.received(name)) == sorted(carried), "the ids the calls ran under"
    assert [m.artifact for m in tool_messages(messages)] == [{"echo": "a"}, {"echo": "b"}, {"echo": "c"}]


def test_a_call_without_an_id_keeps_its_given_id_across_a_review(client, agent_client, http_tools):
    from test_langgraph_review import register_refund

    name = register_refund(client, http_tools)
    message = ai(call(name, {"order_id": "ORD-5", "amount": 5}))
    message = message.model_copy(update={"tool_calls": [{**message.tool_calls[0], "id": None}]})
    graph = agent_graph(scripted(message, "Refunded."), GatewayToolNode(agent_client))
    config = thread()

    paused = graph.invoke({"messages": [HumanMessage("Refund 5")]}, config)
    given = paused["__interrupt__"][0].value["tool_call_id"]
    out = graph.invoke(Command(resume={"action": "continue"}), config)

    (answer,) = tool_messages(out["messages"])
    assert (answer.tool_call_id, answer.status) == (given, "success")
    assert out["messages"][1].tool_calls[0]["id"] == given
    assert [r.call_id for r in http_tools.received(name)] == [given], "the resume ran the call it interrupted for"


# ---- a packed parallel call: split by the gateway, written as the calls the model meant ----


def test_a_packed_call_becomes_three_tool_calls_answered_by_three_tool_messages(client, http_tools):
    name = unique("sales_tax")
    client.register_tool(
        {
            "name": name,
            "description": "The sales tax on a purchase in one city.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "state": {"type": "string"},
                    "purchase_amount": {"type": "number"},
                },
                "required": ["city", "state", "purchase_amount"],
            },
            "limits": {"idempotent": True},
            "backend": http_tools.route(name, lambda args: (200, {"tax": round(args["purchase_amount"] * 0.1, 2)})),
        }
    )
    packed = call(
        name,
        {
            "city": ["Chicago", "Sacramento", "Portland"],
            "state": ["IL", "CA", "OR"],
            "purchase_amount": [30.45, 52.33, 11.23],
        },
    )
    as_written = ai(packed)
    model = scripted(as_written, "The taxes are 3.05, 5.23 and 1.12.")
    graph = agent_graph(model, GatewayToolNode(client))

    out = graph.invoke({"messages": [HumanMessage("Sales tax in Chicago, Sacramento and Portland?")]}, thread())

    messages = out["messages"]
    assert kinds(messages) == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "ToolMessage", "AIMessage"]
    transcript = messages[1]
    assert transcript.id == as_written.id, "the AIMessage is replaced in place"
    base = packed["id"]
    expected = [
        (base, {"city": "Chicago", "state": "IL", "purchase_amount": 30.45}),
        (f"{base}_2", {"city": "Sacramento", "state": "CA", "purchase_amount": 52.33}),
        (f"{base}_3", {"city": "Portland", "state": "OR", "purchase_amount": 11.23}),
    ]
    assert [(c["id"], c["args"]) for c in transcript.tool_calls] == expected
    assert all(c["name"] == name for c in transcript.tool_calls)
    answers = tool_messages(messages)
    assert [(m.tool_call_id, m.status) for m in answers] == [(i, "success") for i, _ in expected]
    assert [m.artifact for m in answers] == [{"tax": 3.04}, {"tax": 5.23}, {"tax": 1.12}]
    rules = [r["rule"] for r in answers[0].additional_kwargs["repairs"]]
    assert rules == ["parallel_split"]
    # The model's next turn sees three calls and three answers, as if it had made them.
    seen = model.seen[1]
    assert [m.tool_call_id for m in seen if m.type == "tool"] == [i for i, _ in expected]
    assert [r.args for r in http_tools.received(name)] == [args for _, args in expected]
