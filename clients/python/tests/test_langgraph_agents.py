"""The prebuilt agents against the real gateway: `create_react_agent` with GatewayToolNode as its tools, and
LangChain v1's `create_agent` with `toolgate_middleware`, each driven by a scripted chat model through a run whose
call the gateway repairs; what the tool server received says what ran."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.types import Command
from support import ai, call, forecast_tool, kinds, register, scripted, thread, tool_messages

import toolgate
from toolgate.langgraph import GatewayToolNode, agateway_tools, gateway_tools, toolgate_middleware

# LangGraph 1.0 points new agents at langchain.agents.create_agent; create_react_agent is still how many start.
pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")


def mailer(client, http_tools) -> str:
    """A send_email tool that needs review."""
    to = {"to": {"type": "string"}}
    return register(
        client, http_tools, "send_email", to, lambda args: (200, {"queued": True}), review={"required": True}
    )


# ---- create_react_agent ----


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_create_react_agent_with_the_node_runs_repaired_calls_as_one_batch(client, agent_client, http_tools, version):
    name = forecast_tool(client, http_tools)
    oslo, bergen = call(name, {"city": "Oslo", "days": "7"}), call(name, {"city": "Bergen", "days": "3"})
    model = scripted(ai(oslo, bergen), "Clear in both.")
    node = GatewayToolNode(agent_client)
    assert isinstance(node, ToolNode)

    agent = create_react_agent(model, tools=node, version=version, checkpointer=InMemorySaver())
    out = agent.invoke({"messages": [HumanMessage("Weather in Oslo and Bergen?")]}, thread())

    # The model was bound to the gateway's tools, as the gateway describes them.
    bound = {t["function"]["name"]: t["function"] for t in model.seen_tools}
    assert bound[name]["parameters"]["properties"]["days"] == {"type": "integer", "minimum": 1}
    messages = out["messages"]
    assert kinds(messages) == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "AIMessage"]
    # Both calls' repairs are in the one AIMessage answered again: one task ran the whole batch, whatever the
    # version, so no task's rewrite undid another's.
    assert [c["args"] for c in messages[1].tool_calls] == [{"city": "Oslo", "days": 7}, {"city": "Bergen", "days": 3}]
    answers = tool_messages(messages)
    assert [(m.tool_call_id, m.status) for m in answers] == [(oslo["id"], "success"), (bergen["id"], "success")]
    assert all(r["rule"] == "string_to_integer" for m in answers for r in m.additional_kwargs["repairs"])
    assert messages[-1].content == "Clear in both."
    # Each call ran once, repaired.
    assert sorted((r.args["city"], r.args["days"]) for r in http_tools.received(name)) == [("Bergen", 3), ("Oslo", 7)]


def test_create_react_agent_with_an_async_node_runs_the_repaired_call(client, gateway, http_tools):
    name = forecast_tool(client, http_tools)
    oslo = call(name, {"city": "Oslo", "days": "7"})
    model = scripted(ai(oslo), "Clear.")

    async def go():
        async with toolgate.AsyncClient(gateway.target, token="data-secret", timeout=30) as aclient:
            with pytest.raises(TypeError, match="acreate"):
                create_react_agent(model, tools=GatewayToolNode(aclient))
            node = await GatewayToolNode.acreate(aclient)
            assert name in node.tools_by_name
            agent = create_react_agent(model, tools=node)
            return await agent.ainvoke({"messages": [HumanMessage("Weather in Oslo?")]}, thread())

    out = asyncio.run(go())
    [answer] = tool_messages(out["messages"])
    assert (answer.tool_call_id, answer.status) == (oslo["id"], "success")
    assert out["messages"][1].tool_calls[0]["args"] == {"city": "Oslo", "days": 7}
    assert [r.args["days"] for r in http_tools.received(name)] == [7]


def test_the_gateway_tools_invoked_on_their_own_run_through_the_gateway(client, agent_client, http_tools):
    name = forecast_tool(client, http_tools)
    tools = {t.name: t for t in gateway_tools(agent_client)}
    answer = tools[name].invoke(
        {"type": "tool_call", "id": "direct-1", "name": name, "args": {"city": "Oslo", "days": "2"}}
    )
    assert (answer.status, answer.artifact) == ("success", {"city": "Oslo", "sky": "clear"})
    failed = tools[name].invoke({"type": "tool_call", "id": "direct-2", "name": name, "args": {"city": "Oslo"}})
    assert failed.status == "error" and "days" in failed.content
    assert [r.args for r in http_tools.received(name)] == [{"city": "Oslo", "days": 2}]


# ---- create_agent with the middleware ----


def host_tagger(name: str) -> StructuredTool:
    """The host's own tool: LangChain checks its arguments against `list[str]`, and refuses a JSON text."""

    def tag(labels: list[str]) -> str:
        raise AssertionError("the host's tool must never run: the gateway runs the call")

    return StructuredTool.from_function(tag, name=name, description="Tags the ticket with labels.")


def tagger_on_gateway(client, http_tools) -> str:
    labels = {"labels": {"type": "array", "items": {"type": "string"}}}
    return register(client, http_tools, "tag_ticket", labels, lambda args: (200, {"tagged": args["labels"]}))


def test_create_agent_with_the_middleware_runs_a_call_the_hosts_schema_would_reject(client, agent_client, http_tools):
    name = tagger_on_gateway(client, http_tools)
    # The model wrote the array as JSON text, which the host's own schema (list[str]) rejects.
    written = call(name, {"labels": '["billing", "urgent"]'})

    without = create_agent(scripted(ai(written), "?"), tools=[host_tagger(name)])
    refused = tool_messages(without.invoke({"messages": [HumanMessage("Tag it.")]})["messages"])
    assert refused[0].status == "error" and "valid list" in refused[0].content
    assert http_tools.received(name) == []

    model = scripted(ai(written), "Tagged billing and urgent.")
    agent = create_agent(model, tools=[host_tagger(name)], middleware=[toolgate_middleware(agent_client, tools=[])])
    out = agent.invoke({"messages": [HumanMessage("Tag it.")]}, thread(user_id="u-7"))

    [answer] = tool_messages(out["messages"])
    assert (answer.tool_call_id, answer.status, answer.name) == (written["id"], "success", name)
    assert answer.artifact == {"tagged": ["billing", "urgent"]}
    assert [r["rule"] for r in answer.additional_kwargs["repairs"]] == ["string_to_json"]
    assert answer.response_metadata["toolgate"]["effective_arguments"] == {"labels": ["billing", "urgent"]}
    assert out["messages"][-1].content == "Tagged billing and urgent."
    assert [r.args for r in http_tools.received(name)] == [{"labels": ["billing", "urgent"]}]


def test_create_agent_with_the_middleware_alone_binds_the_gateways_tools(client, agent_client, http_tools):
    name = forecast_tool(client, http_tools)
    wrong = call(name, {"city": "Oslo"})
    model = scripted(ai(wrong), AIMessage("Which days?"))
    hook = toolgate_middleware(agent_client, on_error=lambda c, m: f"{c['id']}: {m.error.kind.value}, ask for days")
    agent = create_agent(model, middleware=[hook])
    out = agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]}, thread())

    assert name in {t["function"]["name"] for t in model.seen_tools}
    [answer] = tool_messages(out["messages"])
    error = answer.additional_kwargs["error"]
    assert (answer.status, error["kind"], error["model_fixable"]) == ("error", "INVALID_ARGUMENTS", True)
    assert answer.content == f"{wrong['id']}: INVALID_ARGUMENTS, ask for days"
    assert http_tools.received(name) == []


def test_the_middleware_on_an_async_client_needs_its_tools_given(gateway):
    async def go():
        async with toolgate.AsyncClient(gateway.target, token="data-secret") as aclient:
            with pytest.raises(TypeError, match="agateway_tools"):
                toolgate_middleware(aclient)
            return toolgate_middleware(aclient, tools=await agateway_tools(aclient)).tools

    assert asyncio.run(go())


def test_create_react_agent_with_the_node_interrupts_for_review_and_runs_the_batch_once(
    client, agent_client, http_tools
):
    name, plain = mailer(client, http_tools), forecast_tool(client, http_tools)
    mail, weather = call(name, {"to": "team@example.com"}), call(plain, {"city": "Oslo", "days": "2"})
    model = scripted(ai(weather, mail), "Sent, and it is clear.")
    agent = create_react_agent(model, tools=GatewayToolNode(agent_client), checkpointer=InMemorySaver())
    config = thread()

    paused = agent.invoke({"messages": [HumanMessage("Mail the team, and the weather?")]}, config)
    [pending] = paused["__interrupt__"]
    assert (pending.value["tool_call_id"], pending.value["name"]) == (mail["id"], name)
    assert http_tools.received(name) == []
    out = agent.invoke(Command(resume={"action": "continue"}), config)

    messages = out["messages"]
    assert kinds(messages) == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "AIMessage"]
    assert [(m.tool_call_id, m.status) for m in tool_messages(messages)] == [
        (weather["id"], "success"),
        (mail["id"], "success"),
    ]
    # The resume did not send the batch again: the call that needed no review ran once, the reviewed one once.
    assert [r.args for r in http_tools.received(plain)] == [{"city": "Oslo", "days": 2}]
    assert [r.args for r in http_tools.received(name)] == [{"to": "team@example.com"}]


def test_create_agent_with_the_middleware_interrupts_for_review_and_sends_the_edit(client, agent_client, http_tools):
    name = mailer(client, http_tools)
    mail = call(name, {"to": "all@example.com"})
    seen_errors = []
    middleware = toolgate_middleware(agent_client, on_error=lambda c, m: seen_errors.append(c["id"]))
    agent = create_agent(scripted(ai(mail), "Sent."), middleware=[middleware], checkpointer=InMemorySaver())
    config = thread(user_id="u-1")

    paused = agent.invoke({"messages": [HumanMessage("Mail everyone.")]}, config)
    [pending] = paused["__interrupt__"]
    assert (pending.value["tool_call_id"], pending.value["args"]) == (mail["id"], {"to": "all@example.com"})
    assert http_tools.received(name) == []
    out = agent.invoke(Command(resume={"action": "update", "data": {"to": "team@example.com"}}), config)

    [answer] = tool_messages(out["messages"])
    assert (answer.tool_call_id, answer.status) == (mail["id"], "success")
    assert answer.response_metadata["toolgate"]["effective_arguments"] == {"to": "team@example.com"}
    assert [r.args for r in http_tools.received(name)] == [{"to": "team@example.com"}]
    assert seen_errors == []
