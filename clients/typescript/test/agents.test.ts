// The prebuilt agents: LangGraph.js's createReactAgent with GatewayToolNode, and LangChain v1's createAgent with
// toolgateMiddleware, each completing a run against a real gateway whose tool the model calls with a repairable
// mistake; and bindGatewayTools binding a model to the gateway's definitions.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { Command, MemorySaver } from "@langchain/langgraph";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { createAgent } from "langchain";
import { bindGatewayTools, GatewayToolNode, gatewayTools, toolgateMiddleware } from "toolgate/langgraph";
import { aiCalls, ScriptedChatModel, unique, useHarness } from "./support.js";

const h = useHarness();
const tenant = unique("tenant");

/** A tool of this file's own tenant, so the definitions hold it alone. */
async function lookupTool(): Promise<string> {
  const name = unique("lookup_order");
  await h.admin.registerTool({
    name,
    description: "Looks up one of the user's orders.",
    tenant,
    input_schema: {
      type: "object",
      properties: { order: { type: "integer" }, user_id: { type: "string" } },
      required: ["order", "user_id"],
      additionalProperties: false,
    },
    inject: [{ param: "user_id", from: "user_id" }],
    backend: h.tools.route(name, (args) => [200, { order: args.order, owner: args.user_id, state: "shipped" }]),
  });
  return name;
}

const run = { configurable: { thread_id: "agents", user_id: "u-agent", tenant } };

describe("prebuilt agents", () => {
  it("createReactAgent with GatewayToolNode completes a run, bound to the gateway's definitions", async () => {
    const name = await lookupTool();
    const model = new ScriptedChatModel([
      aiCalls("ai-r1", [{ id: "r-1", name, args: { order: "42" } }]),
      new AIMessage({ id: "ai-r2", content: "Order 42 has shipped." }),
    ]);
    const node = await GatewayToolNode.create(h.agent, { context: { tenant } });
    const reactAgent = createReactAgent({ llm: model, tools: node });
    const out = await reactAgent.invoke({ messages: [new HumanMessage("Where is order 42?")] }, run);

    assert.deepEqual(node.tools.map((t) => t.name), [name]);
    assert.deepEqual((model.bound as { name: string }[]).map((t) => t.name), [name]);
    const answer = out.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    assert.equal(answer.status, "success", String(answer.content));
    assert.equal(out.messages.at(-1)?.content, "Order 42 has shipped.");
    assert.deepEqual(h.tools.received(name).map((r) => r.args), [{ order: 42, user_id: "u-agent" }]);
  });

  it("createAgent with toolgateMiddleware completes a run the host's own schema check would have refused", async () => {
    const name = await lookupTool();
    const script = () => [
      aiCalls("ai-m1", [{ id: "m-1", name, args: { order: "7" } }]),
      new AIMessage({ id: "ai-m2", content: "Order 7 has shipped." }),
    ];
    const hostTools = await gatewayTools(h.agent, { context: { tenant } });

    // Without the middleware, the host checks "7" against the integer schema and refuses the call.
    const plain = createAgent({ model: new ScriptedChatModel(script()), tools: hostTools });
    const refused = await plain.invoke({ messages: [new HumanMessage("Order 7?")] }, run);
    const refusal = refused.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    assert.equal(refusal.status, "error");
    assert.equal(h.tools.received(name).length, 0);

    const withGateway = createAgent({
      model: new ScriptedChatModel(script()),
      tools: hostTools,
      middleware: [toolgateMiddleware(h.agent, { context: { tenant } })],
    });
    const out = await withGateway.invoke({ messages: [new HumanMessage("Order 7?")] }, run);
    const answer = out.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    assert.equal(answer.status, "success", String(answer.content));
    assert.deepEqual((answer.additional_kwargs.repairs as { rule: string }[]).map((r) => r.rule), ["string_to_integer"]);
    assert.equal(out.messages.at(-1)?.content, "Order 7 has shipped.");
    assert.deepEqual(h.tools.received(name).map((r) => r.args), [{ order: 7, user_id: "u-agent" }]);
  });

  it("createAgent with toolgateMiddleware interrupts for each reviewed call, takes only decisions that name their call, and runs it at most once", async () => {
    const name = unique("refund");
    await h.admin.registerTool({
      name,
      tenant,
      input_schema: { type: "object", properties: { order: { type: "integer" } }, required: ["order"] },
      review: { required: true },
      backend: h.tools.route(name, (args) => [200, { refunded: args.order }]),
    });
    const model = new ScriptedChatModel([
      aiCalls("ai-v1", [
        { id: "refund-1", name, args: { order: "1" } },
        { id: "refund-2", name, args: { order: 2 } },
      ]),
      new AIMessage({ id: "ai-v2", content: "Refunds handled." }),
    ]);
    const reviewed = createAgent({
      model,
      tools: await gatewayTools(h.agent, { context: { tenant } }),
      middleware: [toolgateMiddleware(h.agent, { context: { tenant } })],
      checkpointer: new MemorySaver(),
    });
    const config = { configurable: { ...run.configurable, thread_id: unique("refunds") } };
    // createAgent runs each call as a task of its own: one interrupt each, and a resume value that names no
    // interrupt reaches them all. A decision that names no call is refused, lest one edit run on both calls.
    const first = (await reviewed.invoke({ messages: [new HumanMessage("Refund 1 and 2")] }, config)) as any;
    const byCall = (state: any) =>
      Object.fromEntries((state.__interrupt__ ?? []).map((i: any) => [i.value.tool_call_id, i.value]));
    assert.deepEqual(Object.keys(byCall(first)).sort(), ["refund-1", "refund-2"]);
    assert.deepEqual(byCall(first)["refund-1"].args, { order: 1 });
    const unnamed = (await reviewed.invoke(new Command({ resume: { action: "update", data: { order: 10 } } }), config)) as any;
    assert.deepEqual(Object.keys(byCall(unnamed)).sort(), ["refund-1", "refund-2"]);
    assert.match(byCall(unnamed)["refund-1"].error, /names no decision for tool call "refund-1"/);
    assert.equal(h.tools.received(name).length, 0);

    const update = { action: "update", data: { order: 10 } };
    const second = (await reviewed.invoke(new Command({ resume: { "refund-1": update } }), config)) as any;
    assert.deepEqual(Object.keys(byCall(second)), ["refund-2"]);
    assert.deepEqual(h.tools.received(name).map((r) => r.args), [{ order: 10 }]);
    const feedback = { action: "feedback", data: "Not this one.", tool_call_id: "refund-2" };
    const done = await reviewed.invoke(new Command({ resume: feedback }), config);
    const answers = done.messages.filter((m) => ToolMessage.isInstance(m)) as ToolMessage[];
    assert.deepEqual(answers.map((m) => [m.tool_call_id, m.status]), [["refund-1", "success"], ["refund-2", "error"]]);
    assert.match(String(answers[1]!.content), /Not this one\./);
    assert.deepEqual(h.tools.received(name).map((r) => r.args), [{ order: 10 }]);
    assert.equal(done.messages.at(-1)?.content, "Refunds handled.");
  });

  it("bindGatewayTools binds the definitions the tenant may call, injected parameters left out", async () => {
    const name = await lookupTool();
    const model = new ScriptedChatModel([]);
    await bindGatewayTools(model, h.agent, { context: { tenant } });
    const bound = model.bound as { type: string; function: { name: string; parameters: { properties: object } } }[];
    const mine = bound.find((d) => d.function.name === name);
    assert.equal(mine?.type, "function");
    assert.deepEqual(Object.keys(mine!.function.parameters.properties), ["order"]);
    const other = new ScriptedChatModel([]);
    await bindGatewayTools(other, h.agent, { context: { tenant: unique("other") } });
    assert.ok(!(other.bound as typeof bound).some((d) => d.function.name === name), "another tenant's tool was bound");
  });
});
