/**
 * The type-safety holes of LangChain TS, closed at the gateway: an auto-fixer whose corrected input shows in the
 * intermediate steps, and an error handler that sees the input that caused the error.
 *
 * The model writes `"42"` for an integer (LangChain's own schema check would refuse the call) and, in its second
 * call, `"forty-two"`. createReactAgent runs them through GatewayToolNode: the first is repaired, and the AIMessage
 * in the agent's state is answered again with the arguments that ran; the second is refused, and the `onError`
 * hook gets the typed error with the original input, to log it or to rewrite what the model is told.
 *
 *   npx tsx examples/auto-fix.ts      (a gateway on TOOLGATE_TARGET; see support.ts)
 */

import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { GatewayToolNode } from "toolgate/langgraph";
import { aiCalls, connect, ScriptedChatModel, serveTool, transcript } from "./support.js";

const { agent, admin } = connect();
const orders = await serveTool((args) => ({ order: args.order, state: "shipped" }));
await admin.registerTool({
  name: "lookup_order",
  description: "Looks up an order by its number.",
  input_schema: { type: "object", properties: { order: { type: "integer" } }, required: ["order"] },
  backend: { http: { url: orders.url } },
});

const model = new ScriptedChatModel([
  aiCalls("ai-1", [
    { id: "call-1", name: "lookup_order", args: { order: "42" } },
    { id: "call-2", name: "lookup_order", args: { order: "forty-two" } },
  ]),
  new AIMessage({ id: "ai-2", content: "Order 42 has shipped." }),
]);

const tools = await GatewayToolNode.create(agent, {
  onError: (call, message) => {
    console.log(`error handler: ${call.name} failed with ${message.error?.kind}; the input was ${message.error?.originalArguments}`);
    return `${message.content} (order numbers are digits, such as 42)`;
  },
});
const reactAgent = createReactAgent({ llm: model, tools });
const out = await reactAgent.invoke({ messages: [new HumanMessage("Where are my orders 42 and forty-two?")] });

console.log("the model wrote:", JSON.stringify(model.script[0]!.tool_calls!.map((c) => c.args)));
console.log("the agent's state holds:");
console.log(transcript(out.messages));
orders.close();
agent.close();
admin.close();
