/**
 * Handling tool-call errors in a LangGraph.js graph, with a fallback to a better model.
 *
 * The cheap model calls the forecast tool with arguments no repair can fix ("next week" for a number of days).
 * GatewayToolNode answers an error ToolMessage whose typed error (kind, whether the model can fix it, the input
 * that caused it) is in `additional_kwargs.error`; a conditional edge reads it and sends the conversation to the
 * better model, whose call runs.
 *
 *   npx tsx examples/error-fallback.ts      (a gateway on TOOLGATE_TARGET; see support.ts)
 */

import { AIMessage, HumanMessage, type ToolMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { toolsCondition } from "@langchain/langgraph/prebuilt";
import type { ToolError } from "toolgate";
import { GatewayToolNode } from "toolgate/langgraph";
import { aiCalls, connect, ScriptedChatModel, serveTool, transcript } from "./support.js";

const { agent, admin } = connect();
const forecast = await serveTool((args) => ({ city: args.city, days: args.days, sky: "clear" }));
await admin.registerTool({
  name: "forecast",
  description: "The forecast for a city, for a number of days.",
  input_schema: {
    type: "object",
    properties: { city: { type: "string" }, days: { type: "integer", minimum: 1, maximum: 14 } },
    required: ["city", "days"],
  },
  backend: { http: { url: forecast.url } },
});

const cheap = new ScriptedChatModel([
  aiCalls("cheap-1", [{ id: "call-1", name: "forecast", args: { city: "Oslo", days: "next week" } }]),
  new AIMessage({ id: "cheap-2", content: "Clear skies in Oslo all week." }),
]);
const better = new ScriptedChatModel([aiCalls("better-1", [{ id: "call-2", name: "forecast", args: { city: "Oslo", days: 7 } }])]);

/** After the tools: a call the model got wrong goes to the better model; anything else back to the agent. */
function afterTools(state: typeof MessagesAnnotation.State): "better" | "agent" {
  const last = state.messages.at(-1) as ToolMessage;
  const error = last.additional_kwargs.error as ToolError | undefined;
  if (error?.modelFixable) {
    console.log(`routing to the better model: ${error.kind} for input ${error.originalArguments}`);
    return "better";
  }
  return "agent";
}

const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", async (state) => ({ messages: [await cheap.invoke(state.messages)] }))
  .addNode("better", async (state) => ({ messages: [await better.invoke(state.messages)] }))
  .addNode("tools", new GatewayToolNode(agent))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", toolsCondition, ["tools", END])
  .addConditionalEdges("tools", afterTools, ["better", "agent"])
  .addEdge("better", "tools")
  .compile();

const out = await graph.invoke({ messages: [new HumanMessage("What's the weather in Oslo next week?")] });
console.log(transcript(out.messages));
forecast.close();
agent.close();
admin.close();
