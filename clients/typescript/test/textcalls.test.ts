// Calls a model wrote in its text instead of making them: Client.callsFromText against a real gateway, and the
// agents that read them back (createAgent with textCallsMiddleware, createReactAgent with textCallsHook as its
// postModelHook), each driven by a scripted model whose first answer writes a Hermes <tool_call> among prose.
// A call only mentioned is left where it is, and the agent ends.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { createAgent } from "langchain";
import {
  GatewayToolNode,
  gatewayTools,
  readTextCalls,
  TEXT_CALLS_KEY,
  textCallsHook,
  textCallsMiddleware,
  toolgateMiddleware,
} from "toolgate/langgraph";
import { ScriptedChatModel, unique, useHarness } from "./support.js";

const h = useHarness();
const tenant = unique("tenant");
const run = { configurable: { thread_id: "text-calls", user_id: "u-text", tenant } };

/** A weather tool of this file's tenant, so the gateway's definitions for it hold this one alone. */
async function weatherTool(): Promise<string> {
  const name = unique("get_weather");
  await h.admin.registerTool({
    name,
    description: "The forecast for a city.",
    tenant,
    input_schema: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" }, user_id: { type: "string" } },
      required: ["city", "user_id"],
      additionalProperties: false,
    },
    inject: [{ param: "user_id", from: "user_id" }],
    backend: h.tools.route(name, (args) => [200, { city: args.city, days: args.days, for: args.user_id, sky: "clear" }]),
  });
  return name;
}

const PROSE = "Let me check the weather in Oslo for you.";

/** A Hermes call among prose, as Qwen or Hermes write it when the serving stack's parser misses it. */
function hermes(name: string, args: Record<string, unknown>): string {
  return `${PROSE}\n<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
}

function toolMessages(messages: BaseMessage[]): ToolMessage[] {
  return messages.filter((m) => ToolMessage.isInstance(m)) as ToolMessage[];
}

describe("Client.callsFromText", () => {
  it("reads a Hermes call among prose: the name as written, the arguments, and the prose as rest", async () => {
    const name = await weatherTool();
    const found = await h.agent.callsFromText(hermes(name, { city: "Oslo", days: 2 }), { context: { tenant } });
    assert.equal(found.envelope, "hermes");
    assert.deepEqual(found.calls.map((c) => [c.name, c.args, c.id]), [[name, { city: "Oslo", days: 2 }, ""]]);
    assert.deepEqual(JSON.parse(found.calls[0]!.arguments), { city: "Oslo", days: 2 });
    assert.equal(found.rest, PROSE);
    assert.equal(found.refusal, "");
    assert.deepEqual(found.messages, []);
    assert.equal(h.tools.received(name).length, 0, "reading a call ran it");
  });

  it("reads nothing from a mention, nor a call of a tool not offered, and says why", async () => {
    const name = await weatherTool();
    const mention = `I could use ${name}, but which city?`;
    const none = await h.agent.callsFromText(mention, { context: { tenant } });
    assert.deepEqual([none.calls, none.envelope, none.rest], [[], "", mention]);

    const other = await h.agent.callsFromText(hermes(name, { city: "Oslo" }), { context: { tenant }, tools: [unique("other")] });
    assert.deepEqual(other.calls, []);
    assert.match(other.refusal, new RegExp(`${name} is not a tool offered`));
    // Another tenant does not see the tool at all.
    const elsewhere = await h.agent.callsFromText(hermes(name, { city: "Oslo" }), { context: { tenant: unique("elsewhere") } });
    assert.deepEqual(elsewhere.calls, []);
  });

  it("reads the format asked for, or the model's, and says in one word why it refuses", async () => {
    const name = await weatherTool();
    const context = { tenant };
    const tagged = hermes(name, { city: "Oslo" });
    const pythonic = `[${name}(city="Oslo")]`;
    // A named format reads its own envelope only: Hermes tags are text to a pythonic reader.
    const asPythonic = await h.agent.callsFromText(tagged, { context, format: "pythonic" });
    assert.deepEqual([asPythonic.calls, asPythonic.format, asPythonic.refusalReason], [[], "pythonic", "other_format"]);
    const read = await h.agent.callsFromText(pythonic, { context, format: "pythonic" });
    assert.deepEqual(read.calls.map((c) => c.args), [{ city: "Oslo" }]);
    // Without one, the model's family names it: Qwen writes Hermes tags, so its pythonic call is text.
    const qwen = await h.agent.callsFromText(pythonic, { context, model: "Qwen/Qwen2.5-7B-Instruct" });
    assert.deepEqual([qwen.calls, qwen.format], [[], "hermes"]);
    const unknown = await h.agent.callsFromText(pythonic, { context, model: "a-model-of-no-known-family" });
    assert.deepEqual([unknown.format, unknown.calls.length], ["auto", 1]);
    await assert.rejects(h.agent.callsFromText(pythonic, { context, format: "claude" }), /hermes/);
    // Every refusal says why, in one word to count.
    for (const [text, reason] of [
      [`Never do this:\n${tagged}`, "negated"],
      [`Earlier I ran:\n${pythonic}`, "past"],
      [`<think>I could call\n${tagged}\nbut no.</think>I won't.`, "reasoning"],
      ["For example:\n```\n" + tagged + "\n```", "quoted"],
    ] as const) {
      const found = await h.agent.callsFromText(text, { context });
      assert.deepEqual([found.calls, found.refusalReason], [[], reason], `${text}: ${found.refusal}`);
    }
    assert.equal(h.tools.received(name).length, 0);
  });

  it("with run, runs the calls found under <callIdPrefix>-<i>, repaired, each answer led by calls_from_text", async () => {
    const name = await weatherTool();
    const text = `[functions.${name}(city="Oslo", days="3")]`;
    const context = { tenant, userId: "u-run" };
    const found = await h.agent.callsFromText(text, { context, run: true, callIdPrefix: "ai-run" });
    assert.equal(found.envelope, "pythonic");
    assert.deepEqual(found.calls.map((c) => [c.id, c.name]), [["ai-run-0", `functions.${name}`]]);
    const [answer] = found.messages;
    assert.equal(answer?.status, "SUCCESS", answer?.content);
    assert.equal(answer?.toolCallId, "ai-run-0");
    assert.deepEqual(answer?.structured, { city: "Oslo", days: 3, for: "u-run", sky: "clear" });
    assert.deepEqual(answer?.repairs.map((r) => r.rule).slice(0, 1), ["calls_from_text"]);
    assert.ok(answer?.repairs.some((r) => r.rule === "string_to_integer"), JSON.stringify(answer?.repairs));
    // The same message sent again runs nothing twice: the call-id record answers it.
    await h.agent.callsFromText(text, { context, run: true, callIdPrefix: "ai-run" });
    assert.deepEqual(h.tools.received(name).map((r) => r.args), [{ city: "Oslo", days: 3, user_id: "u-run" }]);
  });
});

describe("readTextCalls", () => {
  it("keeps a content's other blocks, and leaves a message that makes calls, or writes none, as it is", async () => {
    const name = await weatherTool();
    const reasoning = { type: "reasoning", reasoning: "The user wants Oslo." };
    const blocks = new AIMessage({
      id: "ai-blocks",
      content: [reasoning, { type: "text", text: hermes(name, { city: "Oslo" }) }] as any,
    });
    const read = await readTextCalls(h.agent, blocks, { context: { tenant } });
    assert.deepEqual(read?.content, [reasoning, { type: "text", text: PROSE }]);
    assert.deepEqual(read?.tool_calls?.map((c) => [c.id, c.name, c.args]), [["toolgate_ai-blocks_0", name, { city: "Oslo" }]]);
    assert.deepEqual(read?.additional_kwargs[TEXT_CALLS_KEY], {
      envelope: "hermes",
      wrappers: [],
      format: "auto",
      text: hermes(name, { city: "Oslo" }),
    });

    const calling = new AIMessage({
      id: "ai-calling",
      content: hermes(name, { city: "Rome" }),
      tool_calls: [{ id: "c-1", name, args: { city: "Oslo" }, type: "tool_call" }],
    });
    assert.equal(await readTextCalls(h.agent, calling, { context: { tenant } }), undefined);
    const notOffered = new AIMessage({ id: "ai-other", content: hermes(name, { city: "Oslo" }) });
    assert.equal(await readTextCalls(h.agent, notOffered, { context: { tenant }, tools: ["something_else"] }), undefined);
  });
});

describe("agents reading calls from text", () => {
  it("createAgent with textCallsMiddleware routes a Hermes call in the text to the tool, and the graph finishes", async () => {
    const name = await weatherTool();
    const script = () => [
      new AIMessage({ id: "ai-t1", content: hermes(name, { city: "Oslo", days: 2 }) }),
      new AIMessage({ id: "ai-t2", content: "Clear skies in Oslo." }),
    ];
    const tools = await gatewayTools(h.agent, { context: { tenant } });

    // Without it, the agent sees prose and ends: nothing runs.
    const unread = new ScriptedChatModel(script());
    const plain = createAgent({ model: unread, tools, middleware: [toolgateMiddleware(h.agent, { context: { tenant } })] });
    const ended = await plain.invoke({ messages: [new HumanMessage("Weather in Oslo?")] }, run);
    assert.equal(ended.messages.at(-1)?.id, "ai-t1");
    assert.equal(toolMessages(ended.messages).length, 0);
    assert.equal(unread.prompts.length, 1);
    assert.equal(h.tools.received(name).length, 0);

    const model = new ScriptedChatModel(script());
    const agent = createAgent({
      model,
      tools,
      middleware: [textCallsMiddleware(h.agent, { context: { tenant } }), toolgateMiddleware(h.agent, { context: { tenant } })],
    });
    const out = await agent.invoke({ messages: [new HumanMessage("Weather in Oslo?")] }, run);

    assert.deepEqual(out.messages.map((m) => m.getType()), ["human", "ai", "tool", "ai"]);
    const ai = out.messages[1] as AIMessage;
    assert.equal(ai.id, "ai-t1");
    assert.deepEqual(ai.tool_calls?.map((c) => [c.id, c.name, c.args]), [["toolgate_ai-t1_0", name, { city: "Oslo", days: 2 }]]);
    assert.equal(ai.content, PROSE);
    assert.equal((ai.additional_kwargs[TEXT_CALLS_KEY] as { envelope: string }).envelope, "hermes");
    const [answer] = toolMessages(out.messages);
    assert.equal(answer?.status, "success", String(answer?.content));
    assert.equal(answer?.tool_call_id, "toolgate_ai-t1_0");
    assert.deepEqual(answer?.artifact, { city: "Oslo", days: 2, for: "u-text", sky: "clear" });
    assert.deepEqual(JSON.parse(String(answer?.content)), { city: "Oslo", days: 2, for: "u-text", sky: "clear" });
    assert.equal(out.messages.at(-1)?.content, "Clear skies in Oslo.");
    // The model's next turn saw its call made, and answered.
    const seen = model.prompts[1]!;
    assert.deepEqual((seen.find((m) => m.id === "ai-t1") as AIMessage).tool_calls?.map((c) => c.id), ["toolgate_ai-t1_0"]);
    assert.ok(seen.some((m) => ToolMessage.isInstance(m)));
    assert.equal(model.prompts.length, 2);
    assert.deepEqual(h.tools.received(name).map((r) => r.args), [{ city: "Oslo", days: 2, user_id: "u-text" }]);
  });

  it("createReactAgent with textCallsHook as postModelHook runs a call written as text, repaired by the gateway", async () => {
    const name = await weatherTool();
    // Written with a namespace and a string for an integer: the gateway resolves the name and repairs the value.
    const model = new ScriptedChatModel([
      new AIMessage({ id: "ai-r1", content: hermes(`functions.${name}`, { city: "Oslo", days: "2" }) }),
      new AIMessage({ id: "ai-r2", content: "Clear skies in Oslo." }),
    ]);
    const node = await GatewayToolNode.create(h.agent, { context: { tenant } });
    const agent = createReactAgent({ llm: model, tools: node, postModelHook: textCallsHook(h.agent, { context: { tenant } }) });
    const out = await agent.invoke({ messages: [new HumanMessage("Weather in Oslo?")] }, run);

    assert.deepEqual(out.messages.map((m) => m.getType()), ["human", "ai", "tool", "ai"]);
    const ai = out.messages[1] as AIMessage;
    assert.equal(ai.id, "ai-r1");
    // GatewayToolNode answers the AIMessage again with the call as it ran: the name resolved, the value repaired.
    assert.deepEqual(ai.tool_calls?.map((c) => [c.id, c.name, c.args]), [["toolgate_ai-r1_0", name, { city: "Oslo", days: 2 }]]);
    assert.equal(ai.content, PROSE);
    const [answer] = toolMessages(out.messages);
    assert.equal(answer?.status, "success", String(answer?.content));
    assert.equal(answer?.tool_call_id, "toolgate_ai-r1_0");
    assert.deepEqual(answer?.artifact, { city: "Oslo", days: 2, for: "u-text", sky: "clear" });
    assert.deepEqual(
      (answer?.additional_kwargs.repairs as { rule: string }[]).map((r) => r.rule).sort(),
      ["string_to_integer", "tool_name_prefix"],
    );
    assert.equal(out.messages.at(-1)?.content, "Clear skies in Oslo.");
    assert.equal(model.prompts.length, 2);
    assert.deepEqual(h.tools.received(name).map((r) => r.args), [{ city: "Oslo", days: 2, user_id: "u-text" }]);
  });

  it("leaves a text that only mentions a tool unchanged, and both agents end", async () => {
    const name = await weatherTool();
    const mention = `I could use ${name}, but which city?`;
    const tools = await gatewayTools(h.agent, { context: { tenant } });
    const create = new ScriptedChatModel([new AIMessage({ id: "ai-m1", content: mention })]);
    const agent = createAgent({
      model: create,
      tools,
      middleware: [textCallsMiddleware(h.agent, { context: { tenant } }), toolgateMiddleware(h.agent, { context: { tenant } })],
    });
    const react = new ScriptedChatModel([new AIMessage({ id: "ai-m2", content: mention })]);
    const reactAgent = createReactAgent({
      llm: react,
      tools: await GatewayToolNode.create(h.agent, { context: { tenant } }),
      postModelHook: textCallsHook(h.agent, { context: { tenant } }),
    });

    for (const [graph, model, id] of [[agent, create, "ai-m1"], [reactAgent, react, "ai-m2"]] as const) {
      const out = await (graph as { invoke: typeof agent.invoke }).invoke({ messages: [new HumanMessage("Weather?")] }, run);
      assert.deepEqual(out.messages.map((m) => m.getType()), ["human", "ai"], id);
      const ai = out.messages[1] as AIMessage;
      assert.equal(ai.id, id);
      assert.equal(ai.content, mention);
      assert.deepEqual(ai.tool_calls ?? [], []);
      assert.equal(ai.additional_kwargs[TEXT_CALLS_KEY], undefined);
      assert.equal(model.prompts.length, 1, `${id}: the model was called again`);
    }
    assert.equal(h.tools.received(name).length, 0);
  });

  it("ends the turn as text when the gateway refuses a text that only shows a call, in both agents", async () => {
    const name = await weatherTool();
    const refused = `I won't run this without your approval:\n<tool_call>\n${JSON.stringify({ name, arguments: { city: "Oslo" } })}\n</tool_call>`;
    // A Qwen model writes Hermes tags: its pythonic call is text (the hook sends the model's name with the text).
    const qwen = { model_name: "Qwen/Qwen2.5-7B-Instruct" };
    const pythonic = `[${name}(city="Oslo")]`;
    const texts = [
      { id: "ai-neg", content: refused, response_metadata: {} },
      { id: "ai-qwen", content: pythonic, response_metadata: qwen },
    ];
    for (const { id, content, response_metadata } of texts) {
      const create = new ScriptedChatModel([new AIMessage({ id: `${id}-1`, content, response_metadata })]);
      const agent = createAgent({
        model: create,
        tools: await gatewayTools(h.agent, { context: { tenant } }),
        middleware: [textCallsMiddleware(h.agent, { context: { tenant } }), toolgateMiddleware(h.agent, { context: { tenant } })],
      });
      const react = new ScriptedChatModel([new AIMessage({ id: `${id}-2`, content, response_metadata })]);
      const reactAgent = createReactAgent({
        llm: react,
        tools: await GatewayToolNode.create(h.agent, { context: { tenant } }),
        postModelHook: textCallsHook(h.agent, { context: { tenant } }),
      });
      for (const [graph, model] of [[agent, create], [reactAgent, react]] as const) {
        const out = await (graph as { invoke: typeof agent.invoke }).invoke({ messages: [new HumanMessage("Weather?")] }, run);
        assert.deepEqual(out.messages.map((m) => m.getType()), ["human", "ai"], id);
        const ai = out.messages[1] as AIMessage;
        assert.equal(ai.content, content);
        assert.deepEqual(ai.tool_calls ?? [], []);
        assert.equal(model.prompts.length, 1, `${id}: the model was called again`);
      }
    }
    assert.equal(h.tools.received(name).length, 0);

    // The same Qwen answer, with the format named outright: the hook reads it, and the call runs.
    const named = new ScriptedChatModel([
      new AIMessage({ id: "ai-named", content: pythonic, response_metadata: qwen }),
      new AIMessage({ id: "ai-final", content: "Clear skies in Oslo." }),
    ]);
    const agent = createReactAgent({
      llm: named,
      tools: await GatewayToolNode.create(h.agent, { context: { tenant } }),
      postModelHook: textCallsHook(h.agent, { context: { tenant }, format: "pythonic" }),
    });
    const out = await agent.invoke({ messages: [new HumanMessage("Weather?")] }, run);
    assert.deepEqual(out.messages.map((m) => m.getType()), ["human", "ai", "tool", "ai"]);
    const read = out.messages[1] as AIMessage;
    assert.equal((read.additional_kwargs[TEXT_CALLS_KEY] as { format: string }).format, "pythonic");
    assert.deepEqual(h.tools.received(name).map((r) => r.args), [{ city: "Oslo", user_id: "u-text" }]);
  });
});
