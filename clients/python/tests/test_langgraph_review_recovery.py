"""GatewayToolNode when a review does not go as planned: the call was decided elsewhere first, the node's client
holds no token that opens ToolReview, the gateway lost the review while the graph was paused (restarted with a
fresh data dir), or lost it between the decision and the execution. A real StateGraph, real gateways (the tests'
own, restarted on the same port) and tool servers."""

from __future__ import annotations

import grpc
import pytest
from conftest import ADMIN_TOKEN, DATA_TOKEN, REVIEW_TOKEN
from langchain_core.messages import HumanMessage
from langgraph.types import Command
from support import agent_graph, ai, call, scripted, thread, tool_messages, unique
from test_langgraph_review import register_refund

import toolgate
from toolgate.langgraph import GatewayToolNode
from toolgate.langgraph._review import STILL_PENDING


def test_a_call_decided_elsewhere_first_answers_that_decisions_outcome(client, agent_client, http_tools):
    name = register_refund(client, http_tools)
    refund = call(name, {"order_id": "ORD-4", "amount": 4})
    graph = agent_graph(scripted(ai(refund), "Done."), GatewayToolNode(agent_client))
    config = thread()
    graph.invoke({"messages": [HumanMessage("Refund 4")]}, config)

    # A reviewer decides first, with the CLI or their own client; the resume's decision comes second.
    client.decide(refund["id"], "reject", feedback="Already refunded by hand.")
    out = graph.invoke(Command(resume={"action": "continue"}), config)

    (answer,) = tool_messages(out["messages"])
    assert (answer.status, answer.content) == ("error", "Already refunded by hand.")
    assert answer.additional_kwargs["error"]["kind"] == "REJECTED"
    assert http_tools.received(name) == []


def test_a_node_without_the_review_token_says_it_needs_it(gateway, client, http_tools):
    name = register_refund(client, http_tools)
    refund = call(name, {"order_id": "ORD-6", "amount": 6})
    with toolgate.Client(gateway.target, token=DATA_TOKEN, timeout=30) as data_only:
        graph = agent_graph(scripted(ai(refund), "Done."), GatewayToolNode(data_only))
        config = thread()
        graph.invoke({"messages": [HumanMessage("Refund 6")]}, config)

        with pytest.raises(toolgate.GatewayError) as refused:
            graph.invoke(Command(resume={"action": "continue"}), config)

    assert refused.value.code is grpc.StatusCode.UNAUTHENTICATED
    assert "needs the gateway's review (or admin) token: Client(..., review_token=...)" in str(refused.value)
    assert http_tools.received(name) == []


class RestartingGateway:
    """A gateway of the test's own and an operator's and an agent's client on it. `restart()` stops it and
    starts a fresh one (empty data dir) on the same port, and registers the tools again: the clients reconnect
    to a gateway that has lost every review."""

    def __init__(self, own_gateway, *specs: dict) -> None:
        self._start, self.specs = own_gateway, specs
        self.gateway = own_gateway()
        self.admin = toolgate.Client(self.gateway.target, token=DATA_TOKEN, admin_token=ADMIN_TOKEN, timeout=30)
        self.agent = toolgate.Client(self.gateway.target, token=DATA_TOKEN, review_token=REVIEW_TOKEN, timeout=30)
        self._register()

    def _register(self) -> None:
        for spec in self.specs:
            self.admin.register_tool(spec)

    def restart(self) -> None:
        self.gateway.stop()
        self.gateway = self._start(port=self.gateway.port)
        self._register()

    def close(self) -> None:
        self.admin.close()
        self.agent.close()


def refund_spec(http_tools) -> dict:
    name = unique("refund")
    return {
        "name": name,
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        "review": {"required": True},
        "backend": http_tools.route(name, lambda args: (200, {"refunded": args["order_id"]})),
    }


def test_a_review_the_gateway_lost_while_paused_raises_and_files_no_new_one(own_gateway, http_tools):
    spec = refund_spec(http_tools)
    gw = RestartingGateway(own_gateway, spec)
    try:
        refund = call(spec["name"], {"order_id": "ORD-8"})
        graph = agent_graph(scripted(ai(refund), "Done."), GatewayToolNode(gw.agent))
        config = thread()
        graph.invoke({"messages": [HumanMessage("Refund 8")]}, config)

        gw.restart()
        with pytest.raises(toolgate.GatewayError) as lost:
            graph.invoke(Command(resume={"action": "continue"}), config)

        assert lost.value.code is grpc.StatusCode.NOT_FOUND
        assert f"The gateway has no review of tool call {refund['id']!r}" in str(lost.value)
        assert gw.agent.list_pending() == [], "not executed again in DEFER mode, which would file a new review"
        assert http_tools.received(spec["name"]) == []
    finally:
        gw.close()


def test_a_call_still_pending_after_its_decision_interrupts_again(own_gateway, http_tools):
    """The gateway restarts between the decision and the execution: the execution files the call for review anew
    and answers PENDING_REVIEW, which the node does not return as the outcome. The second resume's decision is
    the one that counts: the first one is not sent again to the new review."""
    spec = refund_spec(http_tools)
    gw = RestartingGateway(own_gateway, spec)

    restarts = ["after the first decision"]

    class RestartAfterDeciding(toolgate.Client):
        def decide(self, *args, **kwargs):
            decided = super().decide(*args, **kwargs)
            if restarts:
                restarts.pop()
                gw.restart()
            return decided

    try:
        refund = call(spec["name"], {"order_id": "ORD-2"})
        with RestartAfterDeciding(gw.gateway.target, token=DATA_TOKEN, review_token=REVIEW_TOKEN) as agent:
            graph = agent_graph(scripted(ai(refund), "Done."), GatewayToolNode(agent, timeout=30))
            config = thread()
            graph.invoke({"messages": [HumanMessage("Refund 2")]}, config)

            paused = graph.invoke(Command(resume={"action": "continue"}), config)

            (again,) = paused["__interrupt__"]
            assert (again.value["tool_call_id"], again.value["error"]) == (refund["id"], STILL_PENDING)
            assert [p.call_id for p in gw.agent.list_pending()] == [refund["id"]], "filed anew"
            out = graph.invoke(Command(resume={"action": "feedback", "data": "Not after all."}), config)

        (answer,) = tool_messages(out["messages"])
        assert (answer.status, answer.content) == ("error", "Not after all.")
        assert http_tools.received(spec["name"]) == []
    finally:
        gw.close()
