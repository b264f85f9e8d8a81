"""Calls a model wrote in its text instead of making them, against the real gateway: `Client.calls_from_text`, and
the agents that read them (`create_agent` with `calls_from_text_middleware`, `create_react_agent` with
`calls_from_text_hook`), each driven by a scripted chat model whose first answer holds a call in its text. What
the tool server received says what ran; a text that only mentions a tool ends the run with the answer unchanged."""

from __future__ import annotations

import asyncio
import json
import logging

import grpc
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from support import kinds, register, scripted, thread, tool_messages, unique

import toolgate
from toolgate.langgraph import (
    GatewayToolNode,
    agateway_tools,
    calls_from_text_hook,
    calls_from_text_middleware,
    toolgate_middleware,
)
from toolgate.langgraph._text_calls import with_text_calls

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

PROSE = "Let me look that up for you."
FINAL = "It is clear in Oslo."


def weather_tool(client, http_tools) -> str:
    """A get_weather tool taking a city; answers its name."""
    city = {"city": {"type": "string"}}
    return register(client, http_tools, "get_weather", city, lambda args: (200, {"city": args["city"], "sky": "clear"}))


def hermes(name: str, args: dict) -> str:
    """A call as Hermes-style models write it in their text."""
    return f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>"


def mention(name: str) -> str:
    return f"I could use {name}, but which city?"


def assert_ran_from_text(out: dict, name: str, http_tools) -> None:
    """The run went human, AI (the call read from its text), tool, AI (the final answer), and the tool ran once."""
    messages = out["messages"]
    assert kinds(messages) == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    asked = messages[1]
    # The call written in the text is now the AIMessage's tool call; its content is the prose around it.
    [made] = asked.tool_calls
    assert (made["name"], made["args"]) == (name, {"city": "Oslo"})
    assert made["id"].startswith("toolgate_text_") and made["id"].endswith("_0")
    assert asked.content == PROSE
    read = asked.response_metadata["toolgate"]["calls_from_text"]
    assert (read["envelope"], read["text"]) == ("hermes", f"{PROSE}\n{hermes(name, {'city': 'Oslo'})}")
    # The tool's answer came back as the ToolMessage of that call.
    [answer] = tool_messages(messages)
    assert (answer.tool_call_id, answer.status, answer.name) == (made["id"], "success", name)
    assert answer.artifact == {"city": "Oslo", "sky": "clear"}
    assert json.loads(answer.content) == {"city": "Oslo", "sky": "clear"}
    assert messages[-1].content == FINAL and not messages[-1].tool_calls
    assert [r.args for r in http_tools.received(name)] == [{"city": "Oslo"}]


def assert_left_unchanged(out: dict, text: str, name: str, http_tools) -> None:
    messages = out["messages"]
    assert kinds(messages) == ["HumanMessage", "AIMessage"]
    assert (messages[1].content, messages[1].tool_calls, messages[1].invalid_tool_calls) == (text, [], [])
    assert "toolgate" not in messages[1].response_metadata
    assert http_tools.received(name) == []


# ---- the client ----


def test_calls_from_text_answers_the_calls_the_rest_and_refusals(client, agent_client, http_tools):
    name = weather_tool(client, http_tools)
    text = f"{PROSE}\n{hermes(name, {'city': 'Oslo'})}"

    found = agent_client.calls_from_text(text, context={"user_id": "u1"})
    assert isinstance(found, toolgate.CallsFromText)
    assert found.calls == (toolgate.ToolCall(name=name, arguments='{"city":"Oslo"}'),)
    assert found.calls[0].args == {"city": "Oslo"}
    assert (found.envelope, found.wrappers, found.rest, found.refusal, found.messages) == ("hermes", (), PROSE, "", ())

    # A pythonic call with a namespace: the name as written, resolved when it runs.
    pythonic = agent_client.calls_from_text(f'[functions.{name}(city="Oslo")]')
    assert [(c.name, c.args) for c in pythonic.calls] == [(f"functions.{name}", {"city": "Oslo"})]
    assert pythonic.envelope == "pythonic"

    # Prose gives none: a mention, an example; a tool not offered is refused, and `tools` narrows what is offered.
    assert agent_client.calls_from_text(mention(name)).calls == ()
    example = agent_client.calls_from_text(f"For example: {hermes(name, {'city': 'Oslo'})}")
    assert example.calls == () and "example" in example.refusal
    narrowed = agent_client.calls_from_text(text, tools=["some_other_tool"])
    assert narrowed.calls == () and f"{name} is not a tool offered" in narrowed.refusal
    assert narrowed.rest == text
    assert agent_client.calls_from_text(text, tools=[name]).calls == found.calls
    assert http_tools.received(name) == []

    # `run` runs them, call i under "<prefix>-<i>", and answers their outcomes.
    ran = agent_client.calls_from_text(text, run=True, call_id_prefix="msg1")
    assert [c.id for c in ran.calls] == ["msg1-0"]
    [outcome] = ran.messages
    assert (outcome.tool_call_id, outcome.ok, outcome.structured) == ("msg1-0", True, {"city": "Oslo", "sky": "clear"})
    assert outcome.repairs[0].rule == "calls_from_text"
    assert [(r.args, r.call_id) for r in http_tools.received(name)] == [({"city": "Oslo"}, "msg1-0")]
    with pytest.raises(toolgate.GatewayError) as refused:
        agent_client.calls_from_text(text, run=True)
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT and "call_id_prefix" in refused.value.details
    with pytest.raises(TypeError, match="list of tool names"):
        agent_client.calls_from_text(text, tools=name)


def test_calls_from_text_reads_the_format_asked_or_the_models_and_says_why_it_refuses(client, agent_client, http_tools):
    name = weather_tool(client, http_tools)
    tagged, pythonic = hermes(name, {"city": "Oslo"}), f'[{name}(city="Oslo")]'

    # A named format reads its own envelope only: Hermes tags are text to a pythonic reader.
    as_pythonic = agent_client.calls_from_text(tagged, format="pythonic")
    assert (as_pythonic.calls, as_pythonic.format, as_pythonic.refusal_reason) == ((), "pythonic", "other_format")
    assert agent_client.calls_from_text(pythonic, format="pythonic").calls[0].args == {"city": "Oslo"}
    # Without one, the model's family names it: Qwen writes Hermes tags, so its pythonic call is text.
    qwen = agent_client.calls_from_text(pythonic, model="Qwen/Qwen2.5-7B-Instruct")
    assert (qwen.calls, qwen.format) == ((), "hermes")
    unknown = agent_client.calls_from_text(pythonic, model="a-model-of-no-known-family")
    assert (unknown.format, [c.args for c in unknown.calls]) == ("auto", [{"city": "Oslo"}])
    with pytest.raises(toolgate.GatewayError) as bad:
        agent_client.calls_from_text(pythonic, format="claude")
    assert bad.value.code == grpc.StatusCode.INVALID_ARGUMENT and "hermes" in bad.value.details

    # Every refusal says why, in one word to count.
    for text, reason in [
        (f"Never do this:\n{tagged}", "negated"),
        (f"Earlier I ran:\n{pythonic}", "past"),
        (f"<think>I could call\n{tagged}\nbut no.</think>I won't.", "reasoning"),
        (f"For example:\n```\n{tagged}\n```", "quoted"),
    ]:
        found = agent_client.calls_from_text(text)
        assert (found.calls, found.refusal_reason) == ((), reason), (text, found.refusal)
    assert http_tools.received(name) == []


def test_the_async_client_reads_calls_from_text(client, gateway, http_tools):
    name = weather_tool(client, http_tools)

    async def go():
        async with toolgate.AsyncClient(gateway.target, token="data-secret", timeout=30) as aclient:
            return await aclient.calls_from_text(f"{PROSE}\n{hermes(name, {'city': 'Oslo'})}")

    found = asyncio.run(go())
    assert ([(c.name, c.args) for c in found.calls], found.rest) == ([(name, {"city": "Oslo"})], PROSE)


# ---- create_agent with the middleware ----


def test_create_agent_with_the_middleware_runs_a_call_written_as_text(client, agent_client, http_tools):
    name = weather_tool(client, http_tools)
    model = scripted(f"{PROSE}\n{hermes(name, {'city': 'Oslo'})}", FINAL)
    middleware = [toolgate_middleware(agent_client), calls_from_text_middleware(agent_client)]
    agent = create_agent(model, middleware=middleware)

    out = agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]}, thread(user_id="u-1"))

    assert_ran_from_text(out, name, http_tools)
    # The call's id comes from the AIMessage's id, which LangChain gave the model's answer.
    asked = out["messages"][1]
    assert asked.id and asked.tool_calls[0]["id"] == f"toolgate_text_{asked.id}_0"
    # The model's second turn saw the call and its answer.
    assert kinds(model.seen[1]) == ["HumanMessage", "AIMessage", "ToolMessage"]


def test_create_agent_without_the_middleware_ends_on_the_call_written_as_text(client, agent_client, http_tools):
    """What the middleware is for: the same answer, and the run ends with the call unmade."""
    name = weather_tool(client, http_tools)
    text = f"{PROSE}\n{hermes(name, {'city': 'Oslo'})}"
    agent = create_agent(scripted(text, FINAL), middleware=[toolgate_middleware(agent_client)])
    assert_left_unchanged(agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]}), text, name, http_tools)


def test_create_agent_with_the_middleware_leaves_a_mention_alone(client, agent_client, http_tools):
    name = weather_tool(client, http_tools)
    model = scripted(AIMessage(mention(name), id="ai_mention"), "never asked")
    middleware = [toolgate_middleware(agent_client), calls_from_text_middleware(agent_client)]
    out = create_agent(model, middleware=middleware).invoke({"messages": [HumanMessage("Weather?")]}, thread())

    assert_left_unchanged(out, mention(name), name, http_tools)
    assert out["messages"][1].id == "ai_mention"
    assert len(model.seen) == 1


def test_create_agent_with_the_middleware_logs_a_refusal_and_ends(client, agent_client, http_tools, caplog):
    name = weather_tool(client, http_tools)
    # The model called a tool it was not offered (the middleware offers get_weather only).
    text = hermes(f"{name}_admin", {"city": "Oslo"})
    middleware = [toolgate_middleware(agent_client), calls_from_text_middleware(agent_client, tools=[name])]
    agent = create_agent(scripted(AIMessage(text, id="ai_refused"), "never asked"), middleware=middleware)

    with caplog.at_level(logging.DEBUG, logger="toolgate.langgraph"):
        out = agent.invoke({"messages": [HumanMessage("Weather?")]}, thread())

    assert_left_unchanged(out, text, name, http_tools)
    [logged] = [r.getMessage() for r in caplog.records if r.name == "toolgate.langgraph"]
    assert "ai_refused" in logged and f"{name}_admin is not a tool offered" in logged


def test_create_agent_with_the_middleware_ends_the_turn_on_a_refused_text(client, agent_client, http_tools, caplog):
    """A text that shows a call without making it (here, a refusal to run it) is refused by the gateway, and the
    agent's turn ends as text: the tool never runs."""
    name = weather_tool(client, http_tools)
    text = f"I won't run this without your approval:\n{hermes(name, {'city': 'Oslo'})}"
    middleware = [toolgate_middleware(agent_client), calls_from_text_middleware(agent_client)]
    agent = create_agent(scripted(AIMessage(text, id="ai_negated"), "never asked"), middleware=middleware)

    with caplog.at_level(logging.DEBUG, logger="toolgate.langgraph"):
        out = agent.invoke({"messages": [HumanMessage("Weather?")]}, thread())

    assert_left_unchanged(out, text, name, http_tools)
    [logged] = [r.getMessage() for r in caplog.records if r.name == "toolgate.langgraph"]
    assert "ai_negated (negated, read as auto)" in logged


def test_create_agent_with_the_middleware_reads_calls_as_the_runs_tenant(client, agent_client, grpc_tools):
    """The CallContext comes from the run's config: another tenant's tool is not offered outside that tenant."""
    name = unique("acme_weather")
    client.register_tool(
        {
            "name": name,
            "description": "The weather, for acme.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "tenant": "acme",
            "backend": grpc_tools.route(name, lambda args: {"content": f"clear in {args['city']}"}),
        }
    )
    text = f"{PROSE}\n{hermes(name, {'city': 'Oslo'})}"

    def agent(*replies):
        tools = toolgate_middleware(agent_client, context={"tenant": "acme"})
        return create_agent(scripted(*replies), middleware=[tools, calls_from_text_middleware(agent_client)])

    elsewhere = agent(AIMessage(text, id="ai_elsewhere"), "never asked").invoke(
        {"messages": [HumanMessage("Weather in Oslo?")]}, thread(tenant="globex")
    )
    assert kinds(elsewhere["messages"]) == ["HumanMessage", "AIMessage"]
    assert elsewhere["messages"][1].content == text and grpc_tools.received(name) == []

    config = thread(tenant="acme", user_id="alice")
    out = agent(AIMessage(text, id="ai_acme"), FINAL).invoke({"messages": [HumanMessage("Weather in Oslo?")]}, config)
    assert kinds(out["messages"]) == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    [answer] = tool_messages(out["messages"])
    assert (answer.tool_call_id, answer.status, answer.content) == (
        "toolgate_text_ai_acme_0",
        "success",
        "clear in Oslo",
    )
    [received] = grpc_tools.received(name)
    assert (received.args, received.context["tenant"], received.context["user_id"]) == (
        {"city": "Oslo"},
        "acme",
        "alice",
    )


def test_create_agent_with_the_middleware_on_an_async_client(client, gateway, http_tools):
    name = weather_tool(client, http_tools)
    text = f"{PROSE}\n{hermes(name, {'city': 'Oslo'})}"

    async def go():
        async with toolgate.AsyncClient(gateway.target, token="data-secret", timeout=30) as aclient:
            sync_run = create_agent(scripted(text), middleware=[calls_from_text_middleware(aclient)])
            with pytest.raises(TypeError, match="async graphs"):
                sync_run.invoke({"messages": [HumanMessage("Weather in Oslo?")]})
            tools = await agateway_tools(aclient)
            middleware = [toolgate_middleware(aclient, tools=tools), calls_from_text_middleware(aclient)]
            agent = create_agent(scripted(AIMessage(text, id="ai-async.1"), FINAL), middleware=middleware)
            return await agent.ainvoke({"messages": [HumanMessage("Weather in Oslo?")]}, thread())

    out = asyncio.run(go())
    assert_ran_from_text(out, name, http_tools)
    # The AIMessage's id made safe for a call id: what is not a letter, digit, _ or - becomes _.
    assert out["messages"][1].tool_calls[0]["id"] == "toolgate_text_ai-async_1_0"


# ---- create_react_agent with the hook ----


def test_create_react_agent_with_the_hook_runs_a_call_written_as_text(client, agent_client, http_tools):
    name = weather_tool(client, http_tools)
    model = scripted(AIMessage(f"{PROSE}\n{hermes(name, {'city': 'Oslo'})}", id="ai_react"), FINAL)
    agent = create_react_agent(
        model,
        tools=GatewayToolNode(agent_client),
        post_model_hook=calls_from_text_hook(agent_client),
        checkpointer=InMemorySaver(),
    )

    out = agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]}, thread(user_id="u-2"))

    assert_ran_from_text(out, name, http_tools)
    assert out["messages"][1].tool_calls[0]["id"] == "toolgate_text_ai_react_0"
    assert name in {t["function"]["name"] for t in model.seen_tools}


def test_create_react_agent_with_the_hook_runs_a_namespaced_pythonic_call(client, agent_client, http_tools):
    name = weather_tool(client, http_tools)
    model = scripted(AIMessage(f'[functions.{name}(city="Oslo")]', id="ai_py"), FINAL)
    hook = calls_from_text_hook(agent_client)
    agent = create_react_agent(model, tools=GatewayToolNode(agent_client), post_model_hook=hook)

    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("Weather in Oslo?")]}, thread()))

    messages = out["messages"]
    assert kinds(messages) == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    # The call went out named as written; the gateway resolved the name, and the node answered the AIMessage
    # again with the name that ran.
    [answer] = tool_messages(messages)
    assert (answer.tool_call_id, answer.status, answer.name) == ("toolgate_text_ai_py_0", "success", name)
    assert [r["rule"] for r in answer.additional_kwargs["repairs"]] == ["tool_name_prefix"]
    assert answer.additional_kwargs["repairs"][0]["before"] == json.dumps(f"functions.{name}")
    asked = messages[1]
    assert [(c["id"], c["name"], c["args"]) for c in asked.tool_calls] == [
        ("toolgate_text_ai_py_0", name, {"city": "Oslo"})
    ]
    assert asked.content == "" and asked.response_metadata["toolgate"]["calls_from_text"]["envelope"] == "pythonic"
    assert messages[-1].content == FINAL
    assert [r.args for r in http_tools.received(name)] == [{"city": "Oslo"}]


def test_create_react_agent_with_the_hook_leaves_a_mention_alone(client, agent_client, http_tools):
    name = weather_tool(client, http_tools)
    model = scripted(mention(name), "never asked")
    agent = create_react_agent(
        model, tools=GatewayToolNode(agent_client), post_model_hook=calls_from_text_hook(agent_client)
    )
    out = agent.invoke({"messages": [HumanMessage("Weather?")]}, thread())

    assert_left_unchanged(out, mention(name), name, http_tools)
    assert len(model.seen) == 1


def test_create_react_agent_with_the_hook_reads_the_format_of_the_model_that_wrote_the_text(
    client, agent_client, http_tools
):
    """The hook sends the chat model's name from the AIMessage's metadata: a Qwen model writes Hermes tags, so a
    pythonic call in its text is text, and the turn ends; named outright, the format is read."""
    name = weather_tool(client, http_tools)
    pythonic = f'[{name}(city="Oslo")]'

    def answer(id: str) -> AIMessage:
        return AIMessage(pythonic, id=id, response_metadata={"model_name": "Qwen/Qwen2.5-7B-Instruct"})

    qwen = scripted(answer("ai_qwen"), "never asked")
    hook = calls_from_text_hook(agent_client)
    out = create_react_agent(qwen, tools=GatewayToolNode(agent_client), post_model_hook=hook).invoke(
        {"messages": [HumanMessage("Weather in Oslo?")]}, thread()
    )
    assert_left_unchanged(out, pythonic, name, http_tools)
    assert len(qwen.seen) == 1

    named = calls_from_text_hook(agent_client, format="pythonic")
    model = scripted(answer("ai_named"), FINAL)
    out = create_react_agent(model, tools=GatewayToolNode(agent_client), post_model_hook=named).invoke(
        {"messages": [HumanMessage("Weather in Oslo?")]}, thread()
    )
    assert kinds(out["messages"]) == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert out["messages"][1].response_metadata["toolgate"]["calls_from_text"]["format"] == "pythonic"
    assert [r.args for r in http_tools.received(name)] == [{"city": "Oslo"}]


# ---- the AIMessage answered again, without a gateway ----


def test_list_content_keeps_its_other_blocks_and_the_rest_replaces_the_text():
    found = toolgate.CallsFromText(
        calls=(toolgate.ToolCall(name="f", arguments='{"a": 1}'), toolgate.ToolCall(name="g", arguments="[1]")),
        envelope="hermes",
        rest="Checking.",
    )
    reasoning = {"type": "reasoning", "reasoning": "the user wants f"}
    written = AIMessage(
        content=[reasoning, {"type": "text", "text": "Checking."}, "<tool_call>...</tool_call>"],
        id="m1",
        usage_metadata={"input_tokens": 3, "output_tokens": 5, "total_tokens": 8},
    )
    answered = with_text_calls(written, str(written.text), found)

    assert answered.id == "m1" and answered.usage_metadata == written.usage_metadata
    assert answered.content == [reasoning, {"type": "text", "text": "Checking."}]
    assert [(c["name"], c["args"], c["id"]) for c in answered.tool_calls] == [("f", {"a": 1}, "toolgate_text_m1_0")]
    # Arguments that are not an object cannot be a LangChain tool call: kept as an invalid one, as written.
    [invalid] = answered.invalid_tool_calls
    assert (invalid["name"], invalid["args"], invalid["id"]) == ("g", "[1]", "toolgate_text_m1_1")
    assert with_text_calls(written, "x", toolgate.CallsFromText(rest="x", refusal="why")) is None
