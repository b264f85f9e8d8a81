/**
 * Reviewing tool calls before they run: continue, update, or feedback.
 *
 * `send_email` needs review (`review.required` in its spec). GatewayToolNode turns the call into a LangGraph
 * interrupt carrying the call as the gateway will run it (repaired); the graph waits in its checkpointer until a
 * person resumes it with `{action: "continue"}`, `{action: "update", data: newArguments}` or
 * `{action: "feedback", data: "what the model is told"}`. The email is sent at most once.
 *
 *   npx tsx examples/review.ts      (a gateway on TOOLGATE_TARGET, with TOOLGATE_REVIEW_TOKEN if it has one)
 */

import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { Command, END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { toolsCondition } from "@langchain/langgraph/prebuilt";
import { GatewayToolNode } from "toolgate/langgraph";
import { aiCalls, connect, ScriptedChatModel, serveTool, transcript } from "./support.js";

const { agent, admin } = connect();
const sent: unknown[] = [];
const mailer = await serveTool((args) => (sent.push(args), { queued: true }));
await admin.registerTool({
  name: "send_email",
  description: "Sends an email.",
  input_schema: {
    type: "object",
    properties: { to: { type: "string" }, subject: { type: "string" }, body: { type: "string" } },
    required: ["to", "subject", "body"],
  },
  review: { required: true },
  backend: { http: { url: mailer.url } },
});

const resumes = {
  continue: { action: "continue" },
  update: { action: "update", data: { to: "team@example.com", subject: "Launch", body: "We launch on Monday." } },
  feedback: { action: "feedback", data: "Don't email the whole company; ask me who should get it." },
};

for (const [choice, resume] of Object.entries(resumes)) {
  const model = new ScriptedChatModel([
    aiCalls(`ai-${choice}`, [
      { id: `mail-${choice}`, name: "send_email", args: { to: "all@example.com", subject: "Launch", body: "Monday!" } },
    ]),
    new AIMessage({ id: `done-${choice}`, content: "Done." }),
  ]);
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode("tools", new GatewayToolNode(agent))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile({ checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: `review-${choice}-${Date.now()}`, user_id: "u-1" } };

  const paused = (await graph.invoke({ messages: [new HumanMessage("Announce the launch.")] }, config)) as any;
  const pending = paused.__interrupt__[0].value;
  console.log(`\n${choice}: the graph waits for review of ${pending.name}(${JSON.stringify(pending.args)})`);
  const out = await graph.invoke(new Command({ resume }), config);
  console.log(transcript(out.messages));
}
console.log(`\nemails sent: ${sent.length}`, sent);
mailer.close();
agent.close();
admin.close();
