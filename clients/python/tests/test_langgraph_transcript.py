"""GatewayToolNode and the transcript: calls the gateway repaired run repaired, and the AIMessage is answered again
(same id) with the calls as they ran, unless rewriting is off; arguments that did not parse are repaired and moved
into the tool calls. A real StateGraph, gateway and tool servers, as in test_langgraph.py."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
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
