/**
 * `GatewayToolNode`: LangGraph.js's `ToolNode` with every call run by the gateway. It reads the tool calls out of
 * the graph's input, runs them with the steps of `review.ts`, and answers the LangChain messages of `transcript.ts`.
 * @module
 */

import { createHash } from "node:crypto";
import { AIMessage, type ToolCall, ToolMessage as LCToolMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import type { Client } from "../client.js";
import type { ToolMessage } from "../types.js";
import { type ContextSource, contextFromConfig, gatewayTools } from "./binding.js";
import { drive, isObject, Memo, type NodeCall, perform, runSteps } from "./review.js";
import { rewriteAiMessage, splitAnswers, toLangChain, withCalls } from "./transcript.js";

/** Called for each call that answered an error, with the LangChain tool call and the typed toolgate message (its
 * `error.originalArguments` is the input that caused the failure). Returns a replacement content, a whole
 * LangChain ToolMessage, or undefined to keep the default. */
export type ErrorHook = (toolCall: ToolCall, message: ToolMessage) => string | LCToolMessage | undefined;

export interface GatewayToolNodeOptions {
  name?: string;
  tags?: string[];
  /** The state key holding the messages (default `messages`). */
  messagesKey?: string;
  /** When what ran differs from what the AIMessage says, answer the AIMessage again (same id) with the arguments
   * that ran (default true). A packed parallel call the gateway split is always written as the calls it was split
   * into, with ids `<id>`, `<id>_2`, ..., each answered by its own ToolMessage. */
  rewriteTranscript?: boolean;
  onError?: ErrorHook;
  /** The defaults the run's `configurable` completes (tenant, userId, sessionId, values). */
  context?: ContextSource;
  /** Interrupt for calls that need review (default true). With false, the gateway waits for the decision until the
   * request's deadline instead. */
  review?: boolean;
  /** Each request's deadline. */
  timeoutMs?: number;
  /** The LangChain tools a prebuilt agent binds its model to (`GatewayToolNode.create` fetches them). They are
   * never invoked: every call goes to the gateway as the model wrote it. */
  tools?: StructuredToolInterface[];
}

interface Parsed {
  ai: AIMessage;
  calls: NodeCall[];
  /** The AIMessage must be answered again: the node gave ids to calls that had none. */
  idsGiven: boolean;
}

/**
 * Runs the last AIMessage's tool calls through the gateway, in one `ExecuteBatch`. It takes `ToolNode`'s place in
 * a `StateGraph` whose state holds the messages, and in `createReactAgent({ llm, tools: node })`.
 *
 * Each call answers one LangChain ToolMessage: `status: "error"` on failure with the typed error in
 * `additional_kwargs.error`, the structured result as `artifact`. A call that needs review becomes an `interrupt`
 * (`type: "toolgate.review"`), resumed with `new Command({ resume: { action: "continue" | "update" | "feedback",
 * data } })` or LangChain v1's `{ decisions: [{ type: "approve" | "edit" | "reject", ... }] }`; deciding needs the
 * client's review token. The run's `configurable` gives the user, tenant and session, never the model.
 */
export class GatewayToolNode extends ToolNode {
  readonly client: Client;
  readonly messagesKey: string;
  readonly rewriteTranscript: boolean;
  readonly onError: ErrorHook | undefined;
  readonly context: ContextSource;
  readonly review: boolean;
  readonly timeoutMs: number | undefined;
  private readonly memo = new Memo();

  constructor(client: Client, options: GatewayToolNodeOptions = {}) {
    super(options.tools ?? [], { name: options.name ?? "tools", tags: options.tags });
    this.client = client;
    this.messagesKey = options.messagesKey ?? "messages";
    this.rewriteTranscript = options.rewriteTranscript ?? true;
    this.onError = options.onError;
    this.context = options.context;
    this.review = options.review ?? true;
    this.timeoutMs = options.timeoutMs;
  }

  /** A node carrying the gateway's tools (as the context's tenant sees them), for prebuilt agents to bind. */
  static async create(client: Client, options: GatewayToolNodeOptions = {}): Promise<GatewayToolNode> {
    const context = typeof options.context === "function" ? undefined : options.context;
    const tools = options.tools ?? (await gatewayTools(client, { context, timeoutMs: options.timeoutMs }));
    return new GatewayToolNode(client, { ...options, tools });
  }

  protected override async run(input: unknown, config: RunnableConfig): Promise<any> {
    if (isObject(input) && "lg_tool_call" in input) {
      // One call sent on its own (createReactAgent's version "v2"), a task beside the other calls' tasks.
      const call = input.lg_tool_call as ToolCall;
      const nodeCall = { id: idOf(call, config), name: call.name, args: call.args };
      const shared = lastCallCount(input[this.messagesKey]) > 1;
      const [message] = await this.execute([nodeCall], config, shared);
      return { [this.messagesKey]: [this.toolMessage(nodeCall, message!)] };
    }
    const messages = this.messagesOf(input);
    const { ai, calls, idsGiven } = parseCalls(messages, config);
    const answers = calls.length > 0 ? await this.execute(calls, config) : [];
    // A packed parallel call the gateway split: one ToolMessage per call it was split into, written into the
    // AIMessage too. Given a list of messages, the node cannot rewrite the AIMessage: there the split call gets one
    // ToolMessage, whose content gives every part's result.
    const asList = Array.isArray(input);
    const toolMessages = calls.flatMap((call, i) => {
      const answer = answers[i]!;
      const parts = answer.parts.length > 0 && !asList ? splitAnswers(call, answer) : [[call, answer] as const];
      return parts.map(([c, m]) => this.toolMessage(c, m));
    });
    if (asList) return toolMessages;
    const split = answers.some((m) => m.parts.length > 0);
    // A split call is always written out as its parts, so that each ToolMessage answers a call the AIMessage
    // carries, even with `rewriteTranscript` off.
    const rewrite = (this.rewriteTranscript || split) && calls.length > 0;
    let rewritten = rewrite ? rewriteAiMessage(ai, calls, answers, !this.rewriteTranscript) : undefined;
    // The ids the node gave the calls, so that each ToolMessage answers a call the AIMessage carries.
    if (rewritten === undefined && idsGiven && ai.id !== undefined) rewritten = ai;
    return { [this.messagesKey]: rewritten ? [rewritten, ...toolMessages] : toolMessages };
  }

  private messagesOf(input: unknown): unknown[] {
    if (Array.isArray(input)) return input;
    const messages = isObject(input) ? input[this.messagesKey] : undefined;
    if (!Array.isArray(messages)) {
      throw new TypeError(`GatewayToolNode takes a list of messages or a state with "${this.messagesKey}"`);
    }
    return messages;
  }

  private async execute(calls: NodeCall[], config: RunnableConfig, shared = false): Promise<ToolMessage[]> {
    const context = contextFromConfig(config, this.context);
    const mode = this.review ? "defer" : "wait";
    const step = (s: Parameters<typeof perform>[1]) => perform(this.client, s, mode, context, this.timeoutMs);
    return runSteps(drive(calls, this.review, shared), step, this.memo, batchKey(config, calls));
  }

  private toolMessage(call: NodeCall, message: ToolMessage): LCToolMessage {
    const out = toLangChain(message, call);
    if (message.error === undefined || this.onError === undefined) return out;
    const toolCall: ToolCall = { id: call.id, name: call.name, args: call.args as Record<string, unknown>, type: "tool_call" };
    const replaced = this.onError(toolCall, message);
    if (replaced instanceof LCToolMessage) return replaced;
    if (replaced !== undefined) out.content = String(replaced);
    return out;
  }
}

/** The last AIMessage (its calls given ids where they had none) and its calls not answered yet, invalid calls
 * included: the gateway repairs arguments that did not parse. */
function parseCalls(messages: unknown[], config: RunnableConfig): Parsed {
  const position = lastAiIndex(messages);
  if (position < 0) throw new TypeError("GatewayToolNode found no AIMessage in its input");
  const written = messages[position] as AIMessage;
  const ai = withCallIds(written, position, config);
  const answered = new Set(
    messages.filter((m) => LCToolMessage.isInstance(m)).map((m) => (m as LCToolMessage).tool_call_id),
  );
  const calls: NodeCall[] = [
    ...(ai.tool_calls ?? []).map((c) => ({ id: c.id!, name: c.name, args: c.args })),
    ...(ai.invalid_tool_calls ?? [])
      .filter((c) => c.name)
      .map((c) => ({ id: c.id!, name: c.name!, args: c.args ?? "", invalid: true })),
  ].filter((c) => !answered.has(c.id));
  return { ai, calls, idsGiven: ai !== written };
}

const ID_UNSAFE = /[^A-Za-z0-9_-]/g;

/**
 * `ai` with an id on each tool call (and each named invalid tool call) that has none. A generated id is the same on
 * every run of the node over the same message (a review's resume runs it again): `toolgate_<message id>_<index>`,
 * or, for a message without an id, a digest of the message, its place in the input and the thread. Refuses an id
 * that two calls share: the gateway answers a reviewed call by its id, so the second would get the first's outcome.
 */
export function withCallIds(ai: AIMessage, position: number, config: RunnableConfig): AIMessage {
  const invalid = (ai.invalid_tool_calls ?? []).filter((c) => c.name);
  const given = [...(ai.tool_calls ?? []).map((c) => c.id), ...invalid.map((c) => c.id)];
  const seen = new Set<string>();
  for (const id of given) {
    if (!id) continue;
    if (seen.has(id)) {
      throw new Error(`the AIMessage ${JSON.stringify(ai.id)} has two tool calls with the id ${JSON.stringify(id)}: each call needs its own id`);
    }
    seen.add(id);
  }
  if (given.every((id) => id)) return ai;
  let base: string;
  if (ai.id) {
    base = ai.id.replace(ID_UNSAFE, "_");
  } else {
    const conf = config.configurable ?? {};
    const seed = JSON.stringify([conf.thread_id, conf.checkpoint_ns, position, ai.content, ai.tool_calls]);
    base = createHash("sha256").update(seed).digest("hex").slice(0, 16);
  }
  const toolCalls = (ai.tool_calls ?? []).map((c, i) => (c.id ? c : { ...c, id: `toolgate_${base}_${i}` }));
  const invalidCalls = (ai.invalid_tool_calls ?? []).map((c, i) => (c.id ? c : { ...c, id: `toolgate_${base}_invalid${i}` }));
  return withCalls(ai, toolCalls, invalidCalls);
}

/** A call's id, or one made for it, the same on every run over the same call in the same thread: the gateway files
 * a review, and answers a call sent again, by its id. */
export function idOf(call: { id?: string; name: string; args?: unknown }, config: RunnableConfig): string {
  if (call.id) return call.id;
  const conf = config.configurable ?? {};
  const seed = JSON.stringify([conf.thread_id, conf.checkpoint_ns, call.name, call.args]);
  return `toolgate_${createHash("sha256").update(seed).digest("hex").slice(0, 16)}`;
}

/** Where the last AIMessage among `messages` stands; -1 when there is none. */
function lastAiIndex(messages: unknown[]): number {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    if (AIMessage.isInstance(messages[i])) return i;
  }
  return -1;
}

/** How many tool calls the last AIMessage among `messages` makes. */
export function lastCallCount(messages: unknown): number {
  const position = Array.isArray(messages) ? lastAiIndex(messages) : -1;
  return position < 0 ? 0 : ((messages as AIMessage[])[position]!.tool_calls?.length ?? 0);
}

function batchKey(config: RunnableConfig, calls: NodeCall[]): string {
  const conf = config.configurable ?? {};
  const signature = calls.map((c) => [c.id, c.name, JSON.stringify(c.args ?? null)]);
  return JSON.stringify([String(conf.thread_id ?? ""), String(conf.checkpoint_ns ?? ""), signature]);
}
