// Review through GatewayToolNode: a call that needs review becomes a LangGraph interrupt, resumed (with a
// checkpointer) by continue, update or feedback, or by LangChain v1's decisions; the tool runs at most once.
// The gateway's call-id record is off here, so that a call the node sent twice would run twice: what keeps a
// resumed node from running its calls again is the node's own replay of what was answered.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { Command, END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { toolsCondition } from "@langchain/langgraph/prebuilt";
import { GatewayToolNode } from "toolgate/langgraph";
import { aiCalls, ScriptedChatModel, unique, useHarness } from "./support.js";

const h = useHarness("\n[idempotency]\nwindow_ms = 0\n");

async function tool(review: boolean): Promise<string> {
  const name = unique(review ? "send_money" : "balance");
  await h.admin.registerTool({
    name,
    input_schema: {
      type: "object",
      properties: { amount: { type: "integer" }, to: { type: "string" } },
      required: ["amount", "to"],
      additionalProperties: false,
    },
    review: { required: review },
    backend: h.tools.route(name, (args) => [200, { done: true, ...args }]),
  });
  return name;
}

function graphWith(model: ScriptedChatModel) {
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode("tools", new GatewayToolNode(h.agent))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile({ checkpointer: new MemorySaver() });
}

/** Runs one turn that stops at a review interrupt; answers the graph, its config and the interrupt's value. */
async function interrupted(calls: { name: string; args: Record<string, unknown>; id: string }[]) {
  const model = new ScriptedChatModel([aiCalls(unique("ai"), calls), new AIMessage({ id: unique("end"), content: "ok" })]);
  const graph = graphWith(model);
  const config = { configurable: { thread_id: unique("thread"), user_id: "u-review" } };
  const first = (await graph.invoke({ messages: [new HumanMessage("pay")] }, config)) as any;
  const interrupts = first.__interrupt__ as { value: any }[] | undefined;
  assert.equal(interrupts?.length, 1, "the run should stop at one review interrupt");
  return { graph, config, payload: interrupts![0]!.value };
}

function toolMessages(state: { messages: unknown[] }): ToolMessage[] {
  return state.messages.filter((m) => ToolMessage.isInstance(m)) as ToolMessage[];
}

describe("review", () => {
  it("interrupts with the Python node's payload and continues; the plain call beside it runs once", async () => {
    const [guarded, plain] = [await tool(true), await tool(false)];
    const { graph, config, payload } = await interrupted([
      { id: "pay-1", name: guarded, args: { amount: "10", to: "ana" } },
      { id: "look-1", name: plain, args: { amount: 0, to: "me" } },
    ]);
    assert.equal(payload.type, "toolgate.review");
    assert.equal(payload.tool_call_id, "pay-1");
    assert.equal(payload.name, guarded);
    assert.deepEqual(payload.args, { amount: 10, to: "ana" });
    assert.deepEqual(payload.actions, ["continue", "update", "feedback"]);
    assert.deepEqual(payload.pending.map((p: any) => p.tool_call_id), ["pay-1"]);
    assert.deepEqual(payload.actionRequests, [{ name: guarded, args: { amount: 10, to: "ana" }, description: payload.content }]);
    assert.equal(h.tools.received(guarded).length, 0);

    const done = await graph.invoke(new Command({ resume: { action: "continue" } }), config);
    assert.deepEqual(toolMessages(done).map((m) => [m.tool_call_id, m.status]), [["pay-1", "success"], ["look-1", "success"]]);
    assert.equal(h.tools.received(guarded).length, 1);
    assert.equal(h.tools.received(plain).length, 1);
    assert.equal(done.messages.at(-1)?.content, "ok");
  });

  it("updates the arguments, and the transcript shows the call that ran", async () => {
    const guarded = await tool(true);
    const { graph, config } = await interrupted([{ id: "pay-2", name: guarded, args: { amount: 10, to: "ana" } }]);
    const done = await graph.invoke(new Command({ resume: { action: "update", data: { amount: 5, to: "ana" } } }), config);
    assert.deepEqual(h.tools.received(guarded).map((r) => r.args), [{ amount: 5, to: "ana" }]);
    const ai = done.messages.find((m: any) => m.tool_calls?.length) as AIMessage;
    assert.deepEqual(ai.tool_calls?.[0]?.args, { amount: 5, to: "ana" });
    assert.equal(toolMessages(done)[0]?.status, "success");
  });

  it("turns feedback into a REJECTED answer without running the tool", async () => {
    const guarded = await tool(true);
    const { graph, config } = await interrupted([{ id: "pay-3", name: guarded, args: { amount: 99, to: "eve" } }]);
    const done = await graph.invoke(new Command({ resume: { action: "feedback", data: "Not to eve." } }), config);
    const [answer] = toolMessages(done);
    assert.equal(answer?.status, "error");
    assert.equal((answer?.additional_kwargs.error as { kind: string }).kind, "REJECTED");
    assert.match(String(answer?.content), /Not to eve\./);
    assert.equal(h.tools.received(guarded).length, 0);
  });

  it("asks again, saying why, when an update does not fit the tool", async () => {
    const guarded = await tool(true);
    const { graph, config } = await interrupted([{ id: "pay-4", name: guarded, args: { amount: 1, to: "bo" } }]);
    const again = (await graph.invoke(new Command({ resume: { action: "update", data: { amount: "lots" } } }), config)) as any;
    const payload = again.__interrupt__?.[0]?.value;
    assert.equal(payload?.tool_call_id, "pay-4");
    assert.match(String(payload?.error), /amount/);
    const done = await graph.invoke(new Command({ resume: { action: "continue" } }), config);
    assert.equal(toolMessages(done)[0]?.status, "success");
    assert.deepEqual(h.tools.received(guarded).map((r) => r.args), [{ amount: 1, to: "bo" }]);
  });

  it("takes LangChain v1's human-in-the-loop decisions for several pending calls", async () => {
    const guarded = await tool(true);
    const { graph, config, payload } = await interrupted([
      { id: "hitl-1", name: guarded, args: { amount: 1, to: "a" } },
      { id: "hitl-2", name: guarded, args: { amount: 2, to: "b" } },
      { id: "hitl-3", name: guarded, args: { amount: 3, to: "c" } },
    ]);
    assert.equal(payload.actionRequests.length, 3);
    const decisions = [
      { type: "approve" },
      { type: "edit", editedAction: { name: guarded, args: { amount: 20, to: "b" } } },
      { type: "reject", message: "no" },
    ];
    const done = await graph.invoke(new Command({ resume: { decisions } }), config);
    assert.deepEqual(
      toolMessages(done).map((m) => [m.tool_call_id, m.status]),
      [["hitl-1", "success"], ["hitl-2", "success"], ["hitl-3", "error"]],
    );
    assert.deepEqual(h.tools.received(guarded).map((r) => r.args.amount).sort(), [1, 20]);
  });
});
