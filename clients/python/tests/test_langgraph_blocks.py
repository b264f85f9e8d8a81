"""A tool whose result is an image, in a real LangGraph graph against the real gateway: the model is handed the
image as a LangChain image content block, not its bytes as text; a text result stays a string."""

from __future__ import annotations

import base64

from langchain_core.messages import HumanMessage
from support import agent_graph, ai, call, scripted, thread, tool_messages, unique

from toolgate.langgraph import GatewayToolNode, gateway_tools

# A 1x1 transparent PNG.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def _chart_tool(client, http_tools) -> str:
    name = unique("chart")
    client.register_tool(
        {
            "name": name,
            "description": "Draws the sales chart.",
            "input_schema": {"type": "object", "properties": {}},
            "backend": http_tools.route(name, lambda args: (200, PIXEL_PNG, "image/png")),
        }
    )
    return name


def test_an_image_result_reaches_the_model_as_an_image_content_block(client, http_tools):
    name = _chart_tool(client, http_tools)
    model = scripted(ai(call(name, {})), "A single transparent pixel.")
    graph = agent_graph(model, GatewayToolNode(client))

    out = graph.invoke({"messages": [HumanMessage("Show me the sales chart.")]}, thread())

    (answer,) = tool_messages(out["messages"])
    assert answer.status == "success"
    assert isinstance(answer.content, list), answer.content
    (block,) = answer.content
    assert (block["type"], block["mime_type"]) == ("image", "image/png")
    assert base64.b64decode(block["base64"]) == PIXEL_PNG
    # The model's next turn is handed the same block.
    assert model.seen[1][-1].content == answer.content


def test_a_gateway_tool_invoked_on_its_own_answers_the_image_block_and_text_stays_a_string(client, http_tools):
    name = _chart_tool(client, http_tools)
    note = unique("note")
    client.register_tool(
        {
            "name": note,
            "description": "A note.",
            "input_schema": {"type": "object", "properties": {}},
            "backend": http_tools.route(note, lambda args: (200, "just text")),
        }
    )
    tools = {t.name: t for t in gateway_tools(client)}

    chart = tools[name].invoke({"type": "tool_call", "id": "c1", "name": name, "args": {}})
    assert [b["type"] for b in chart.content] == ["image"]
    assert base64.b64decode(chart.content[0]["base64"]) == PIXEL_PNG
    text = tools[note].invoke({"type": "tool_call", "id": "c2", "name": note, "args": {}})
    assert text.content == "just text"
