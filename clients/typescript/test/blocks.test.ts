// A tool whose result is an image, in a real LangGraph.js graph against the real gateway: the model is handed the
// image as a LangChain image content block, not its bytes as text; a text result stays a string.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { toolsCondition } from "@langchain/langgraph/prebuilt";
import { GatewayToolNode, gatewayTools } from "toolgate/langgraph";
import { aiCalls, ScriptedChatModel, unique, useHarness } from "./support.js";

const h = useHarness();

/** A 1x1 transparent PNG. */
const PIXEL_PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  "base64",
);

async function httpTool(name: string, answer: () => [number, Buffer, string] | [number, unknown]): Promise<void> {
  await h.admin.registerTool({
    name,
    description: "A tool.",
    input_schema: { type: "object", properties: {} },
    backend: h.tools.route(name, answer),
  });
}

describe("a result of more than text", () => {
  it("reaches the model as an image content block", async () => {
    const name = unique("chart");
    await httpTool(name, () => [200, PIXEL_PNG, "image/png"]);
    const model = new ScriptedChatModel([
      aiCalls("ai-1", [{ id: "call-1", name, args: {} }]),
      new AIMessage({ id: "ai-2", content: "A single transparent pixel." }),
    ]);
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
      .addNode("tools", new GatewayToolNode(h.agent))
      .addEdge(START, "agent")
      .addConditionalEdges("agent", toolsCondition, ["tools", END])
      .addEdge("tools", "agent")
      .compile();

    const out = await graph.invoke({ messages: [new HumanMessage("Show me the sales chart.")] });

    const answer = out.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    assert.equal(answer.status, "success");
    assert.ok(Array.isArray(answer.content), String(answer.content));
    assert.deepEqual(answer.content, [{ type: "image", data: PIXEL_PNG.toString("base64"), mimeType: "image/png" }]);
  });

  it("is answered as blocks by a gateway tool invoked on its own, and text stays a string", async () => {
    const chart = unique("chart");
    const note = unique("note");
    await httpTool(chart, () => [200, PIXEL_PNG, "image/png"]);
    await httpTool(note, () => [200, "just text"]);
    const tools = new Map((await gatewayTools(h.agent)).map((t) => [t.name, t]));

    const image = await tools.get(chart)!.invoke({});
    assert.deepEqual(image, [{ type: "image", data: PIXEL_PNG.toString("base64"), mimeType: "image/png" }]);
    assert.equal(await tools.get(note)!.invoke({}), "just text");
  });
});
