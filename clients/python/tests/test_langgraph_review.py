"""GatewayToolNode and review: a call that needs a person interrupts the graph, and resuming it (continue, update or
feedback; one call at a time, or several by id; in an async graph; in another process) decides it and runs it at
most once. A real StateGraph, gateway and tool servers, as in test_langgraph.py. The node's client is an agent's:
the data token and the review token, no admin token; the operator's `client` registers the tools."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from support import agent_graph, ai, call, scripted, thread, tool_messages, unique

import toolgate
from toolgate.langgraph import GatewayToolNode, abind_gateway_tools

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
def test_a_review_required_tool_interrupts_the_graph_and_resumes(client, agent_client, http_tools, action):
    name = register_refund(client, http_tools)
    refund = call(name, {"order_id": "ORD-7", "amount": "40"})
    model = scripted(ai(refund), "Handled the refund.")
    graph = agent_graph(model, GatewayToolNode(agent_client))
    config = thread(user_id="alice", tenant="acme")

    paused = graph.invoke({"messages": [HumanMessage("Refund order 7")]}, config)

    (pending,) = paused["__interrupt__"]
    assert pending.value["type"] == "toolgate.review"
    assert (pending.value["tool_call_id"], pending.value["name"]) == (refund["id"], name)
    assert pending.value["args"] == {"order_id": "ORD-7", "amount": 40}, "what the reviewer sees, repaired"
    assert [r["rule"] for r in pending.value["repairs"]] == ["string_to_integer"]
    assert graph.get_state(config).next == ("tools",)
    (waiting,) = [p for p in agent_client.list_pending("acme") if p.call_id == refund["id"]]
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


def test_a_batch_with_reviews_runs_each_call_once_across_interrupts(client, agent_client, http_tools):
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
    graph = agent_graph(scripted(ai(first, check, second), "Done."), GatewayToolNode(agent_client))
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


def test_a_resume_can_decide_several_calls_by_id_and_an_invalid_edit_is_asked_again(client, agent_client, http_tools):
    refund = register_refund(client, http_tools)
    a, b = call(refund, {"order_id": "ORD-1", "amount": 10}), call(refund, {"order_id": "ORD-2", "amount": 20})
    graph = agent_graph(scripted(ai(a, b), "Done."), GatewayToolNode(agent_client))
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


# ---- an async graph with the async client ----


def test_an_async_graph_with_the_async_client_reviews_and_resumes(gateway, client, http_tools):
    from conftest import DATA_TOKEN, REVIEW_TOKEN

    refund = register_refund(client, http_tools)
    order = call(refund, {"order_id": "ORD-9", "amount": 12})

    async def scenario():
        async with toolgate.AsyncClient(
            gateway.target, token=DATA_TOKEN, review_token=REVIEW_TOKEN, timeout=30
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


# ---- a resume in another process ----


def test_a_resume_in_another_process_still_runs_the_reviewed_call_once(client, agent_client, http_tools):
    """What a node that never saw the first run does (a resume in another process, a restarted worker): it sends
    the batch again. Both calls are answered by their ids and run once: the reviewed call from its review record,
    the call that needs no review from the gateway's record of call ids (LangGraph's own ToolNode, whose memory is
    per process, would run it a second time)."""
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
    agent_graph(model, GatewayToolNode(agent_client), checkpointer=checkpoints).invoke(
        {"messages": [HumanMessage("Refund 3")]}, config
    )

    # The same checkpoints, a new node: nothing remembered from the first run.
    second = agent_graph(model, GatewayToolNode(agent_client), checkpointer=checkpoints)
    out = second.invoke(Command(resume={"action": "continue"}), config)

    assert [m.status for m in tool_messages(out["messages"])] == ["success", "success"]
    assert [r.args for r in http_tools.received(refund)] == [{"order_id": "ORD-3", "amount": 30}]
    assert len(http_tools.received(lookup)) == 1
