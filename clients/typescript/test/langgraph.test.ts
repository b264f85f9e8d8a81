// GatewayToolNode in real LangGraph.js graphs, driven by a scripted chat model, against a real gateway and a real
// HTTP tool server: repairs shown in the transcript, error routing to a fallback model, injection from configurable.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { toolsCondition } from "@langchain/langgraph/prebuilt";
import { GatewayToolNode } from "toolgate/langgraph";
import { aiCalls, ScriptedChatModel, unique, useHarness } from "./support.js";

const h = useHarness();

/** A weather tool taking a city and a number of days; the model never sees `user_id`, which the gateway injects. */
async function weatherTool(): Promise<string> {
  const name = unique("get_weather");
  await h.admin.registerTool({
    name,
    description: "The forecast for a city.",
    input_schema: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" }, user_id: { type: "string" } },
      required: ["city", "days", "user_id"],
      additionalProperties: false,
    },
    inject: [{ param: "user_id", from: "user_id" }],
    backend: h.tools.route(name, (args) => [200, { city: args.city, days: args.days, for: args.user_id, sky: "clear" }]),
  });
  return name;
}

/** agent -> tools -> agent, ending when the model makes no call. */
function reactGraph(model: ScriptedChatModel, node: GatewayToolNode) {
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode("tools", node)
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile();
}

describe("GatewayToolNode", () => {
  it("runs a misspelled name and a string for an integer repaired, and the final state shows the repaired call", async () => {
    const name = await weatherTool();
    const misspelled = name.toUpperCase().replace("GET_", "GET-");
    const model = new ScriptedChatModel([
      aiCalls("ai-1", [{ id: "call-1", name: misspelled, args: { city: "Oslo", days: "3" } }]),
      new AIMessage({ id: "ai-2", content: "Clear skies in Oslo." }),
    ]);
    const graph = reactGraph(model, new GatewayToolNode(h.agent));
    const out = await graph.invoke({ messages: [new HumanMessage("Weather in Oslo?")] }, { configurable: { user_id: "u-1" } });

    const ai = out.messages.find((m) => m.id === "ai-1") as AIMessage;
    assert.deepEqual(ai.tool_calls?.map((c) => [c.id, c.name, c.args]), [["call-1", name, { city: "Oslo", days: 3 }]]);
    const answer = out.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    assert.equal(answer.status, "success", String(answer.content));
    assert.equal(answer.tool_call_id, "call-1");
    assert.deepEqual(answer.artifact, { city: "Oslo", days: 3, for: "u-1", sky: "clear" });
    assert.deepEqual(
      (answer.additional_kwargs.repairs as { rule: string }[]).map((r) => r.rule).sort(),
      ["string_to_integer", "tool_name_normalized"],
    );
    // The intermediate step the model saw next carries the repaired call, not the one it wrote.
    const seen = model.prompts[1]!.find((m) => m.id === "ai-1") as AIMessage;
    assert.deepEqual(seen.tool_calls?.[0]?.args, { city: "Oslo", days: 3 });
    assert.equal(out.messages.filter((m) => m.id === "ai-1").length, 1);
    assert.deepEqual(h.tools.received(name).map((r) => r.args), [{ city: "Oslo", days: 3, user_id: "u-1" }]);
  });

  it("answers an invalid call with an error ToolMessage that a conditional edge routes to a fallback model", async () => {
    const name = await weatherTool();
    const primary = new ScriptedChatModel([
      aiCalls("ai-p1", [{ id: "bad-1", name, args: { city: "Oslo", days: "a few" } }]),
      new AIMessage({ id: "ai-p2", content: "Done." }),
    ]);
    const fallback = new ScriptedChatModel([aiCalls("ai-f1", [{ id: "good-1", name, args: { city: "Oslo", days: 2 } }])]);
    const routed: unknown[] = [];
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async (state) => ({ messages: [await primary.invoke(state.messages)] }))
      .addNode("fallback", async (state) => ({ messages: [await fallback.invoke(state.messages)] }))
      .addNode("tools", new GatewayToolNode(h.agent))
      .addEdge(START, "agent")
      .addConditionalEdges("agent", toolsCondition, ["tools", END])
      .addConditionalEdges(
        "tools",
        (state) => {
          const last = state.messages.at(-1) as ToolMessage;
          const error = last.additional_kwargs.error as { kind: string; originalArguments: string } | undefined;
          routed.push(error && { kind: error.kind, input: error.originalArguments });
          return error?.kind === "INVALID_ARGUMENTS" ? "fallback" : "agent";
        },
        ["fallback", "agent"],
      )
      .addEdge("fallback", "tools")
      .compile();
    const out = await graph.invoke({ messages: [new HumanMessage("Weather?")] }, { configurable: { user_id: "u-2" } });

    assert.deepEqual(routed, [{ kind: "INVALID_ARGUMENTS", input: '{"city":"Oslo","days":"a few"}' }, undefined]);
    const answers = out.messages.filter((m) => ToolMessage.isInstance(m)) as ToolMessage[];
    assert.deepEqual(answers.map((m) => [m.tool_call_id, m.status]), [["bad-1", "error"], ["good-1", "success"]]);
    assert.match(String(answers[0]!.content), /days/);
    assert.equal(out.messages.at(-1)?.content, "Done.");
    assert.deepEqual(h.tools.received(name).map((r) => r.args.days), [2]);
  });

  it("takes the injected user_id from configurable, never from the model", async () => {
    const name = await weatherTool();
    const model = new ScriptedChatModel([
      aiCalls("ai-i1", [{ id: "inj-1", name, args: { city: "Oslo", days: 1, user_id: "someone-else" } }]),
      new AIMessage({ id: "ai-i2", content: "ok" }),
    ]);
    const node = new GatewayToolNode(h.agent, { context: { userId: "default-user" } });
    const out = await reactGraph(model, node).invoke(
      { messages: [new HumanMessage("hi")] },
      { configurable: { user_id: "u-from-config", thread_id: "t-inj" } },
    );
    assert.deepEqual(h.tools.received(name).map((r) => r.args.user_id), ["u-from-config"]);
    // The transcript shows what ran: the model's user_id is not among the arguments.
    const ai = out.messages.find((m) => m.id === "ai-i1") as AIMessage;
    assert.deepEqual(ai.tool_calls?.[0]?.args, { city: "Oslo", days: 1 });

    // Without a configurable user_id, the node's default context applies.
    const again = new ScriptedChatModel([aiCalls("ai-i3", [{ id: "inj-2", name, args: { city: "Rome", days: 1 } }])]);
    await reactGraph(again, node).invoke({ messages: [new HumanMessage("hi")] });
    assert.equal(h.tools.received(name).at(-1)?.args.user_id, "default-user");
  });

  it("runs calls without ids and invalid calls, giving them ids the AIMessage carries", async () => {
    const name = await weatherTool();
    const written = new AIMessage({
      id: "ai-n1",
      content: "",
      tool_calls: [{ name, args: { city: "Oslo", days: 1 }, type: "tool_call" }],
      invalid_tool_calls: [{ name, args: "{'city': 'Bergen', 'days': 2,}", id: "inv-1", error: "not JSON", type: "invalid_tool_call" }],
    });
    const node = new GatewayToolNode(h.agent);
    const out = (await node.invoke({ messages: [written] }, { configurable: { user_id: "u" } })) as { messages: any[] };
    const [ai, ...answers] = out.messages as [AIMessage, ...ToolMessage[]];
    assert.equal(ai.id, "ai-n1");
    assert.deepEqual(ai.tool_calls?.map((c) => [c.id, c.args]), [
      ["toolgate_ai-n1_0", { city: "Oslo", days: 1 }],
      ["inv-1", { city: "Bergen", days: 2 }],
    ]);
    assert.equal(ai.invalid_tool_calls?.length, 0);
    assert.deepEqual(answers.map((m) => [m.tool_call_id, m.status]), [["toolgate_ai-n1_0", "success"], ["inv-1", "success"]]);
  });

  it("writes a packed parallel call as the three calls the gateway split it into, each with its own ToolMessage", async () => {
    const name = unique("sales_tax");
    await h.admin.registerTool({
      name,
      description: "The sales tax on a purchase in one city.",
      input_schema: {
        type: "object",
        properties: { city: { type: "string" }, state: { type: "string" }, purchase_amount: { type: "number" } },
        required: ["city", "state", "purchase_amount"],
      },
      limits: { idempotent: true },
      backend: h.tools.route(name, (args) => [200, { city: args.city, tax: Math.round(Number(args.purchase_amount) * 10) / 100 }]),
    });
    const packed = { city: ["Chicago", "Sacramento", "Portland"], state: ["IL", "CA", "OR"], purchase_amount: 30 };
    const model = new ScriptedChatModel([
      aiCalls("ai-s1", [{ id: "call-s", name, args: packed }]),
      new AIMessage({ id: "ai-s2", content: "3 each." }),
    ]);
    const graph = reactGraph(model, new GatewayToolNode(h.agent));
    const out = await graph.invoke({ messages: [new HumanMessage("Sales tax on 30 dollars in three cities?")] });

    const expected: [string, Record<string, unknown>][] = [
      ["call-s", { city: "Chicago", state: "IL", purchase_amount: 30 }],
      ["call-s_2", { city: "Sacramento", state: "CA", purchase_amount: 30 }],
      ["call-s_3", { city: "Portland", state: "OR", purchase_amount: 30 }],
    ];
    const ai = out.messages.find((m) => m.id === "ai-s1") as AIMessage;
    assert.deepEqual(ai.tool_calls?.map((c) => [c.id, c.args]), expected);
    const answers = out.messages.filter((m) => ToolMessage.isInstance(m)) as ToolMessage[];
    assert.deepEqual(answers.map((m) => [m.tool_call_id, m.status]), expected.map(([id]) => [id, "success"]));
    assert.deepEqual(answers.map((m) => (m.artifact as { city: string }).city), ["Chicago", "Sacramento", "Portland"]);
    assert.deepEqual((answers[0]!.additional_kwargs.repairs as { rule: string }[]).map((r) => r.rule), ["parallel_split"]);
    // The model's next turn sees three calls and three answers, as if it had made them.
    const seen = model.prompts[1]!;
    assert.deepEqual(seen.filter((m) => ToolMessage.isInstance(m)).map((m) => (m as ToolMessage).tool_call_id), expected.map(([id]) => id));
    assert.deepEqual(h.tools.received(name).map((r) => r.args), expected.map(([, args]) => args));
  });
});
