"""GatewayToolNode in a real LangGraph StateGraph (agent -> tools -> agent) driven by a scripted chat model, against
the real gateway and real tool servers: one test per behaviour the node must show, each checking what the
transcript says and what the tool servers actually received."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from support import agent_graph, ai, call, scripted, thread, unique

import toolgate
from toolgate.langgraph import GatewayToolNode, abind_gateway_tools, bind_gateway_tools


def kinds(messages) -> list[str]:
    return [type(m).__name__ for m in messages]


def tool_messages(messages) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


# ---- a tool error, the model retrying, success ----


def test_a_tool_error_reaches_the_model_which_retries_and_succeeds(client, http_tools):
    name = unique("lookup_order")

    def lookup(args):
        if not args["order_id"].startswith("ORD-"):
            return 400, "order id must start with ORD-"
        return 200, {"order_id": args["order_id"], "state": "shipped"}

    client.register_tool(
        {
            "name": name,
            "description": "Where an order is.",
            "input_schema": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
            "backend": http_tools.route(name, lookup),
        }
    )
    wrong, right = call(name, {"order_id": "123"}), call(name, {"order_id": "ORD-123"})
    model = scripted(ai(wrong), ai(right), "Order ORD-123 has shipped.")
    graph = agent_graph(model, GatewayToolNode(client))

    out = graph.invoke({"messages": [HumanMessage("Where is order 123?")]}, thread())

    messages = out["messages"]
    assert kinds(messages) == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage", "ToolMessage", "AIMessage"]
    failed, succeeded = tool_messages(messages)
    assert (failed.tool_call_id, failed.status, failed.name) == (wrong["id"], "error", name)
    assert "order id must start with ORD-" in failed.content
    error = failed.additional_kwargs["error"]
    assert (error["kind"], error["model_fixable"], error["retryable"]) == ("TOOL_ERROR", True, False)
    assert json.loads(error["original_arguments"]) == {"order_id": "123"}
    # The model's next turn is shown the error, and its retry succeeds.
    assert model.seen[1][-1].content == failed.content
    assert (succeeded.tool_call_id, succeeded.status) == (right["id"], "success")
    assert succeeded.artifact == {"order_id": "ORD-123", "state": "shipped"}
    assert "error" not in succeeded.additional_kwargs
    assert messages[-1].content == "Order ORD-123 has shipped."
    assert [r.args for r in http_tools.received(name)] == [{"order_id": "123"}, {"order_id": "ORD-123"}]


# ---- a schema mismatch reported with a violation ----


def test_a_schema_mismatch_is_reported_with_a_violation_the_model_can_act_on(client, http_tools):
    name = unique("news_digest")
    client.register_tool(
        {
            "name": name,
            "description": "A digest of news on exactly three topics.",
            "input_schema": {
                "type": "object",
                "properties": {"topic": {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3}},
                "required": ["topic"],
            },
            "backend": http_tools.route(name, lambda args: (200, {"digest": ", ".join(args["topic"])})),
        }
    )
    short = call(name, {"topic": ["water"]})
    fixed = call(name, {"topic": ["water", "energy", "food"]})
    model = scripted(ai(short), ai(fixed), "Here is your digest.")
    graph = agent_graph(model, GatewayToolNode(client))

    out = graph.invoke({"messages": [HumanMessage("News about water")]}, thread())

    rejected, accepted = tool_messages(out["messages"])
    assert (rejected.tool_call_id, rejected.status) == (short["id"], "error")
    error = rejected.additional_kwargs["error"]
    assert (error["kind"], error["model_fixable"], error["retryable"]) == ("INVALID_ARGUMENTS", True, False)
    assert error["violations"] == [
        {
            "instance_path": "/topic",
            "schema_path": "/properties/topic/minItems",
            "message": '["water"] has less than 3 items',
        }
    ]
    # The text the model reads names the field and what is wrong with it.
    assert 'topic: ["water"] has less than 3 items' in rejected.content
    assert json.loads(error["original_arguments"]) == {"topic": ["water"]}
    assert accepted.status == "success"
    assert accepted.artifact == {"digest": "water, energy, food"}
    assert [r.args for r in http_tools.received(name)] == [{"topic": ["water", "energy", "food"]}], (
        "the invalid call never reached the tool"
    )


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


# ---- user_id injected from the config; a model-supplied one ignored ----


def test_user_id_is_injected_from_the_config_and_the_models_own_is_dropped(client, grpc_tools):
    name = unique("get_balance")
    client.register_tool(
        {
            "name": name,
            "description": "The balance of one of the user's accounts.",
            "input_schema": {
                "type": "object",
                "properties": {"account": {"type": "string"}, "user_id": {"type": "string"}},
                "required": ["account", "user_id"],
            },
            "inject": [{"param": "user_id", "from": "user_id"}],
            "tenant": "acme",
            "backend": grpc_tools.route(
                name, lambda args: {"content": "42.00 EUR", "structured": {"balance": "42.00", "of": args["user_id"]}}
            ),
        }
    )
    # The model is bound to the definitions the tenant sees: no user_id to fill in.
    model = scripted(ai(call(name, {"account": "checking", "user_id": "mallory"})), "You have 42 EUR.")
    bound = bind_gateway_tools(model, client, context={"tenant": "acme"})
    definition = next(t for t in bound.kwargs["tools"] if t["function"]["name"] == name)
    assert definition["function"]["parameters"]["properties"] == {"account": {"type": "string"}}
    assert definition["function"]["parameters"]["required"] == ["account"]
    assert name not in [t["function"]["name"] for t in client.definitions("openai")], "another tenant's tool"

    graph = agent_graph(bound, GatewayToolNode(client))
    config = thread(user_id="alice", tenant="acme")
    out = graph.invoke({"messages": [HumanMessage("My checking balance?")]}, config)

    (received,) = grpc_tools.received(name)
    assert received.args == {"account": "checking", "user_id": "alice"}
    assert received.context == {
        "tenant": "acme",
        "user_id": "alice",
        "session_id": config["configurable"]["thread_id"],
        "values": {},
    }
    (answer,) = tool_messages(out["messages"])
    assert (answer.status, answer.content, answer.artifact) == (
        "success",
        "42.00 EUR",
        {"balance": "42.00", "of": "alice"},
    )
    assert answer.additional_kwargs["repairs"] == [
        {"rule": "injected_override_removed", "path": "/user_id", "before": '"mallory"', "after": ""}
    ]
    # The transcript shows what the model controls of the call that ran: no user_id at all.
    assert out["messages"][1].tool_calls[0]["args"] == {"account": "checking"}


def test_an_injected_tool_called_without_a_user_is_refused(client, grpc_tools):
    name = unique("get_balance")
    client.register_tool(
        {
            "name": name,
            "input_schema": {
                "type": "object",
                "properties": {"account": {"type": "string"}, "user_id": {"type": "string"}},
            },
            "inject": [{"param": "user_id", "from": "user_id"}],
            "backend": grpc_tools.route(name, lambda args: {"content": "never"}),
        }
    )
    graph = agent_graph(scripted(ai(call(name, {"account": "checking"})), "Cannot."), GatewayToolNode(client))

    out = graph.invoke({"messages": [HumanMessage("Balance?")]}, thread())

    (answer,) = tool_messages(out["messages"])
    assert (answer.status, answer.additional_kwargs["error"]["kind"]) == ("error", "PERMISSION_DENIED")
    assert grpc_tools.received(name) == []


# ---- review: interrupt, then continue / update / feedback ----


def register_refund(client, http_tools) -> str:
    name = unique("refund")
    client.register_tool(
        {
            "name": name,
            "description": "Refunds an order.",
            "input_schema": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "integer"}},
                "required": ["order_id", "amount"],
                "additionalProperties": False,
            },
            "review": {"required": True},
            "backend": http_tools.route(name, lambda args: (200, {"refunded": args["amount"]})),
        }
    )
    return name


@pytest.mark.parametrize("action", ["continue", "update", "feedback"])
def test_a_review_required_tool_interrupts_the_graph_and_resumes(client, http_tools, action):
    name = register_refund(client, http_tools)
    refund = call(name, {"order_id": "ORD-7", "amount": "40"})
    model = scripted(ai(refund), "Handled the refund.")
    graph = agent_graph(model, GatewayToolNode(client))
    config = thread(user_id="alice", tenant="acme")

    paused = graph.invoke({"messages": [HumanMessage("Refund order 7")]}, config)

    (pending,) = paused["__interrupt__"]
    assert pending.value["type"] == "toolgate.review"
    assert (pending.value["tool_call_id"], pending.value["name"]) == (refund["id"], name)
    assert pending.value["args"] == {"order_id": "ORD-7", "amount": 40}, "what the reviewer sees, repaired"
    assert [r["rule"] for r in pending.value["repairs"]] == ["string_to_integer"]
    assert graph.get_state(config).next == ("tools",)
    (waiting,) = [p for p in client.list_pending("acme") if p.call_id == refund["id"]]
    assert (waiting.tenant, waiting.user_id, waiting.session_id) == (
        "acme",
        "alice",
        config["configurable"]["thread_id"],
    )
    assert http_tools.received(name) == [], "nothing runs before the decision"

    resume = {
        "continue": {"action": "continue"},
        "update": {"action": "update", "data": {"order_id": "ORD-7", "amount": 25}},
        "feedback": {"action": "feedback", "data": "Refunds over 30 EUR need a manager; ask the user."},
    }[action]
    out = graph.invoke(Command(resume=resume), config)

    assert "__interrupt__" not in out
    (answer,) = tool_messages(out["messages"])
    assert answer.tool_call_id == refund["id"]
    ran = [r.args for r in http_tools.received(name)]
    if action == "continue":
        assert ran == [{"order_id": "ORD-7", "amount": 40}]
        assert (answer.status, answer.artifact) == ("success", {"refunded": 40})
    elif action == "update":
        assert ran == [{"order_id": "ORD-7", "amount": 25}]
        assert (answer.status, answer.artifact) == ("success", {"refunded": 25})
        assert out["messages"][1].tool_calls[0]["args"] == {"order_id": "ORD-7", "amount": 25}, (
            "the transcript shows the edited call that ran"
        )
    else:
        assert ran == [], "a rejected call never runs"
        assert answer.status == "error"
        assert answer.additional_kwargs["error"]["kind"] == "REJECTED"
        assert answer.content == "Refunds over 30 EUR need a manager; ask the user."
    assert out["messages"][-1].content == "Handled the refund."
    assert refund["id"] not in [p.call_id for p in client.list_pending("acme")]


def test_a_batch_with_reviews_runs_each_call_once_across_interrupts(client, http_tools):
    refund, lookup = register_refund(client, http_tools), unique("lookup")
    client.register_tool(
        {
            "name": lookup,
            "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            "backend": http_tools.route(lookup, lambda args: (200, {"order_id": args["order_id"], "paid": 40})),
        }
    )
    first = call(refund, {"order_id": "ORD-1", "amount": 10})
    check = call(lookup, {"order_id": "ORD-2"})
    second = call(refund, {"order_id": "ORD-2", "amount": 40})
    graph = agent_graph(scripted(ai(first, check, second), "Done."), GatewayToolNode(client))
    config = thread()

    paused = graph.invoke({"messages": [HumanMessage("Two refunds")]}, config)
    (pending,) = paused["__interrupt__"]
    assert pending.value["tool_call_id"] == first["id"]
    assert [p["tool_call_id"] for p in pending.value["pending"]] == [first["id"], second["id"]]
    assert len(http_tools.received(lookup)) == 1

    # One decision answers the first pending call; the graph stops again for the second.
    paused = graph.invoke(Command(resume={"action": "continue"}), config)
    (pending,) = paused["__interrupt__"]
    assert pending.value["tool_call_id"] == second["id"]
    assert [p["tool_call_id"] for p in pending.value["pending"]] == [second["id"]]
    assert len(http_tools.received(lookup)) == 1, "the call that needs no review did not run again"
    assert http_tools.received(refund) == [], "decisions are sent once every pending call has one"

    out = graph.invoke(Command(resume={"action": "feedback", "data": "Not this one."}), config)

    answers = tool_messages(out["messages"])
    assert [m.tool_call_id for m in answers] == [first["id"], check["id"], second["id"]]
    assert [m.status for m in answers] == ["success", "success", "error"]
    assert answers[2].additional_kwargs["error"]["kind"] == "REJECTED"
    assert len(http_tools.received(lookup)) == 1, "run once across both interrupts"
    assert [r.args for r in http_tools.received(refund)] == [{"order_id": "ORD-1", "amount": 10}]


def test_a_resume_can_decide_several_calls_by_id_and_an_invalid_edit_is_asked_again(client, http_tools):
    refund = register_refund(client, http_tools)
    a, b = call(refund, {"order_id": "ORD-1", "amount": 10}), call(refund, {"order_id": "ORD-2", "amount": 20})
    graph = agent_graph(scripted(ai(a, b), "Done."), GatewayToolNode(client))
    config = thread()
    graph.invoke({"messages": [HumanMessage("Refunds")]}, config)

    paused = graph.invoke(
        Command(
            resume={
                a["id"]: {"action": "update", "data": {"order_id": "ORD-1", "amount": "lots"}},
                b["id"]: {"action": "continue"},
            }
        ),
        config,
    )

    (again,) = paused["__interrupt__"]
    assert again.value["tool_call_id"] == a["id"]
    assert "amount" in again.value["error"], again.value["error"]
    out = graph.invoke(Command(resume={"action": "update", "data": {"order_id": "ORD-1", "amount": 5}}), config)

    assert [m.status for m in tool_messages(out["messages"])] == ["success", "success"]
    assert sorted(r.args["amount"] for r in http_tools.received(refund)) == [5, 20]


# ---- parallel calls answered in order ----


def test_parallel_tool_calls_run_concurrently_and_are_answered_in_call_order(client, grpc_tools):
    name = unique("slow_square")
    finished: list[int] = []
    lock = threading.Lock()

    def slow_square(args):
        time.sleep(args["delay_ms"] / 1000)
        with lock:
            finished.append(args["n"])
        return {"content": str(args["n"] ** 2), "structured": {"n": args["n"], "square": args["n"] ** 2}}

    client.register_tool(
        {
            "name": name,
            "input_schema": {
                "type": "object",
                "properties": {"n": {"type": "integer"}, "delay_ms": {"type": "integer"}},
                "required": ["n", "delay_ms"],
            },
            "backend": grpc_tools.route(name, slow_square),
        }
    )
    # The first call is the slowest: answers in completion order would come back reversed.
    calls = [call(name, {"n": n, "delay_ms": 600 - 150 * n}) for n in range(4)]
    graph = agent_graph(scripted(ai(*calls), "0, 1, 4, 9"), GatewayToolNode(client))

    out = graph.invoke({"messages": [HumanMessage("Squares of 0..3")]}, thread())

    answers = tool_messages(out["messages"])
    assert [m.tool_call_id for m in answers] == [c["id"] for c in calls]
    assert [m.content for m in answers] == ["0", "1", "4", "9"]
    assert [m.artifact["n"] for m in answers] == [0, 1, 2, 3]
    assert finished == [3, 2, 1, 0], "the calls ran at the same time, the quickest finishing first"


# ---- an error handler that receives the original arguments ----


def test_the_error_handler_receives_the_original_arguments_of_a_failed_call(client, http_tools):
    name = unique("forecast")
    client.register_tool(
        {
            "name": name,
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city", "days"],
            },
            "backend": http_tools.route(name, lambda args: (422, f"no forecast for {args['city']}")),
        }
    )
    handled: list[tuple[dict, toolgate.ToolMessage]] = []

    def on_error(tool_call, message):
        handled.append((tool_call, message))
        return f"{message.name} failed for {message.error.original_arguments}; tell the user."

    failing = call(name, {"city": "Atlantis", "days": "3"})
    graph = agent_graph(scripted(ai(failing), "No forecast."), GatewayToolNode(client, on_error=on_error))

    out = graph.invoke({"messages": [HumanMessage("Forecast for Atlantis")]}, thread())

    ((tool_call, message),) = handled
    assert tool_call["id"] == failing["id"] and tool_call["args"] == {"city": "Atlantis", "days": "3"}
    assert isinstance(message, toolgate.ToolMessage) and message.error.kind is toolgate.ErrorKind.TOOL_ERROR
    # The input as the model wrote it, before the gateway repaired "3" into 3 and ran the tool.
    assert json.loads(message.error.original_arguments) == {"city": "Atlantis", "days": "3"}
    assert [r.args for r in http_tools.received(name)] == [{"city": "Atlantis", "days": 3}]
    (answer,) = tool_messages(out["messages"])
    assert answer.content == f"{name} failed for {message.error.original_arguments}; tell the user."
    assert (answer.status, answer.additional_kwargs["error"]["kind"]) == ("error", "TOOL_ERROR")


# ---- the async path ----


def test_an_async_graph_with_the_async_client_reviews_and_resumes(gateway, client, http_tools):
    from conftest import ADMIN_TOKEN, DATA_TOKEN

    refund = register_refund(client, http_tools)
    order = call(refund, {"order_id": "ORD-9", "amount": 12})

    async def scenario():
        async with toolgate.AsyncClient(
            gateway.target, token=DATA_TOKEN, admin_token=ADMIN_TOKEN, timeout=30
        ) as aclient:
            model = await abind_gateway_tools(scripted(ai(order), "Refunded."), aclient)
            graph = agent_graph(model, GatewayToolNode(aclient))
            config = thread(user_id="bob")
            paused = await graph.ainvoke({"messages": [HumanMessage("Refund 9")]}, config)
            assert paused["__interrupt__"][0].value["tool_call_id"] == order["id"]
            return await graph.ainvoke(Command(resume={"action": "continue"}), config)

    out = asyncio.run(scenario())

    (answer,) = tool_messages(out["messages"])
    assert (answer.status, answer.artifact) == ("success", {"refunded": 12})
    assert [r.args for r in http_tools.received(refund)] == [{"order_id": "ORD-9", "amount": 12}]


def test_a_resume_in_another_process_still_runs_the_reviewed_call_once(client, http_tools):
    """What a node that never saw the first run does (a resume in another process, a restarted worker): it sends
    the batch again. The reviewed call is answered by id and runs once; the call that needs no review runs again,
    as LangGraph's own ToolNode would run it again (the node's memory of it is per process)."""
    refund, lookup = register_refund(client, http_tools), unique("lookup")
    client.register_tool(
        {
            "name": lookup,
            "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            "backend": http_tools.route(lookup, lambda args: (200, {"paid": 40})),
        }
    )
    reviewed, plain = call(refund, {"order_id": "ORD-3", "amount": 30}), call(lookup, {"order_id": "ORD-3"})
    model, checkpoints = scripted(ai(reviewed, plain), "Done."), InMemorySaver()
    config = thread()
    agent_graph(model, GatewayToolNode(client), checkpointer=checkpoints).invoke(
        {"messages": [HumanMessage("Refund 3")]}, config
    )

    # The same checkpoints, a new node: nothing remembered from the first run.
    second = agent_graph(model, GatewayToolNode(client), checkpointer=checkpoints)
    out = second.invoke(Command(resume={"action": "continue"}), config)

    assert [m.status for m in tool_messages(out["messages"])] == ["success", "success"]
    assert [r.args for r in http_tools.received(refund)] == [{"order_id": "ORD-3", "amount": 30}]
    assert len(http_tools.received(lookup)) == 2


def test_a_sync_client_serves_an_async_graph(client, http_tools):
    name = unique("echo")
    client.register_tool(
        {
            "name": name,
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "backend": http_tools.route(name, lambda args: (200, {"echo": args["text"]})),
        }
    )
    graph = agent_graph(scripted(ai(call(name, {"text": "hi"})), "Said hi."), GatewayToolNode(client))

    out = asyncio.run(graph.ainvoke({"messages": [HumanMessage("Say hi")]}, thread()))

    (answer,) = tool_messages(out["messages"])
    assert (answer.status, answer.artifact) == ("success", {"echo": "hi"})
