/**
 * What the examples share: clients for a local gateway (from the environment), a tool server of their own, and a
 * scripted chat model, so each runs with no API key.
 *
 *   TOOLGATE_TARGET        the gateway (default 127.0.0.1:50051)
 *   TOOLGATE_TOKEN         its data token, if it has one
 *   TOOLGATE_ADMIN_TOKEN   its admin token (the examples register their own tools)
 *   TOOLGATE_REVIEW_TOKEN  its review token (the review example decides its calls)
 * @module
 */

import { createServer } from "node:http";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { Client } from "toolgate";

/** The clients an example needs: `agent` with the data (and review) token, `admin` to register its tools. */
export function connect(): { agent: Client; admin: Client } {
  const target = process.env.TOOLGATE_TARGET ?? "127.0.0.1:50051";
  const token = process.env.TOOLGATE_TOKEN;
  return {
    agent: new Client(target, { token, reviewToken: process.env.TOOLGATE_REVIEW_TOKEN }),
    admin: new Client(target, { token, adminToken: process.env.TOOLGATE_ADMIN_TOKEN }),
  };
}

/** An HTTP tool on 127.0.0.1 (the gateway POSTs the arguments as JSON); answers its URL and a way to stop it. */
export async function serveTool(handler: (args: any) => unknown): Promise<{ url: string; close: () => void }> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const answer = await handler(JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}"));
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/`, close: () => server.close() };
}

/**
 * A chat model that answers a script of AIMessages, one per call, built on @langchain/core's FakeListChatModel.
 * `bindTools` records the tools it was bound to and answers itself, so prebuilt agents accept it; every prompt it
 * was given is kept in `prompts`.
 */
export class ScriptedChatModel extends FakeListChatModel {
  readonly script: AIMessage[];
  readonly prompts: BaseMessage[][] = [];
  bound: unknown[] = [];

  constructor(script: AIMessage[]) {
    super({ responses: script.map((m) => String(m.content)) });
    this.script = script;
  }

  override async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.prompts.push(messages);
    const next = this.script[this.prompts.length - 1] ?? new AIMessage("(the script has ended)");
    return { generations: [{ text: String(next.content), message: next }] };
  }

  override bindTools(tools: unknown[]): any {
    this.bound = tools;
    return this;
  }
}

/** An AIMessage making these tool calls. */
export function aiCalls(id: string, calls: { name: string; args: Record<string, unknown>; id: string }[]): AIMessage {
  return new AIMessage({ id, content: "", tool_calls: calls.map((c) => ({ ...c, type: "tool_call" as const })) });
}

/** One line per message: what the graph's state holds, as a reader of its intermediate steps sees it. */
export function transcript(messages: BaseMessage[]): string {
  return messages
    .map((m) => {
      const calls = (m as AIMessage).tool_calls ?? [];
      const shown = calls.length ? calls.map((c) => `${c.name}(${JSON.stringify(c.args)})`).join(", ") : m.content;
      const status = (m as { status?: string }).status ? ` [${(m as { status?: string }).status}]` : "";
      return `  ${m.getType().padEnd(5)}${status} ${typeof shown === "string" ? shown : JSON.stringify(shown)}`;
    })
    .join("\n");
}
