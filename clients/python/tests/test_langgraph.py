"""GatewayToolNode in a real LangGraph StateGraph (agent -> tools -> agent) driven by a scripted chat model, against
the real gateway and real tool servers: one test per behaviour the node must show, each checking what the
transcript says and what the tool servers actually received. Calls that need review are in test_langgraph_review.py,
the transcript rewritten to show repaired calls in test_langgraph_transcript.py."""

from __future__ import annotations

import asyncio
import json
import threading

from langchain_core.messages import HumanMessage
from support import agent_graph, ai, call, kinds, scripted, thread, tool_messages, unique

import toolgate
from toolgate.langgraph import GatewayToolNode, bind_gateway_tools

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


# ---- parallel calls answered in order ----


def test_parallel_tool_calls_run_concurrently_and_are_answered_in_call_order(client, grpc_tools):
    name = unique("slow_square")
    finished: list[int] = []
    lock = threading.Lock()
    # Events, not delays: all four calls must be inside the tool at once to pass the barrier (they run
    # concurrently), and each waits for the next one to finish, so they finish last call first.
    together = threading.Barrier(4, timeout=30)
    done = [threading.Event() for _ in range(4)]

    def slow_square(args):
        n = args["n"]
        together.wait()
        if n < 3 and not done[n + 1].wait(30):
            raise RuntimeError(f"call {n + 1} never finished")
        with lock:
            finished.append(n)
        done[n].set()
        return {"content": str(n**2), "structured": {"n": n, "square": n**2}}

    client.register_tool(
        {
            "name": name,
            "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            "backend": grpc_tools.route(name, slow_square),
        }
    )
    # The first call finishes last: answers in completion order would come back reversed.
    calls = [call(name, {"n": n}) for n in range(4)]
    graph = agent_graph(scripted(ai(*calls), "0, 1, 4, 9"), GatewayToolNode(client))

    out = graph.invoke({"messages": [HumanMessage("Squares of 0..3")]}, thread())

    answers = tool_messages(out["messages"])
    assert [m.tool_call_id for m in answers] == [c["id"] for c in calls]
    assert [m.content for m in answers] == ["0", "1", "4", "9"]
    assert [m.artifact["n"] for m in answers] == [0, 1, 2, 3]
    assert finished == [3, 2, 1, 0], "the calls ran at the same time, the last finishing first"


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


# ---- a sync client in an async graph ----


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
