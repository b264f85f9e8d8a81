/**
 * `toolgateMiddleware`: LangChain v1 agent middleware (`createAgent({ middleware })`) whose `wrapToolCall` sends
 * each call to the gateway as the model wrote it, before the host's own schema check can reject it.
 * @module
 */

import type { ToolCall, ToolMessage as LCToolMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { StructuredToolInterface } from "@langchain/core/tools";
import type { AgentMiddleware, ToolCallRequest } from "langchain";
import type { Client } from "../client.js";
import type { ToolMessage } from "../types.js";
import { type ContextSource, contextFromConfig } from "./binding.js";
import { type ErrorHook, idOf, lastCallCount } from "./node.js";
import { drive, Memo, perform, runSteps } from "./review.js";
import { toLangChain } from "./transcript.js";

export interface ToolgateMiddlewareOptions {
  /** The defaults the run's `configurable` completes (tenant, userId, sessionId, values). */
  context?: ContextSource;
  /** Interrupt for calls that need review, as GatewayToolNode does (default true). */
  review?: boolean;
  timeoutMs?: number;
  onError?: ErrorHook;
  /** Tools the agent binds its model to besides its own (`await gatewayTools(client)`). */
  tools?: StructuredToolInterface[];
}

// The brand langchain's createMiddleware puts on a middleware (a global symbol), so this module needs langchain
// only for its types: an agent without createAgent never loads it.
const MIDDLEWARE_BRAND = Symbol.for("AgentMiddleware");

/**
 * A middleware that runs every tool call of a `createAgent` agent through the gateway: the call (repaired,
 * validated, injected, reviewed) answers one LangChain ToolMessage, with the typed error in
 * `additional_kwargs.error` when it failed. The agent's own tools are not invoked, so their schemas never reject
 * a call the gateway would repair. Each call is one `Execute` with the tool call's id.
 */
export function toolgateMiddleware(client: Client, options: ToolgateMiddlewareOptions = {}): AgentMiddleware {
  const memo = new Memo();
  const review = options.review ?? true;
  const wrapToolCall = async (request: ToolCallRequest): Promise<LCToolMessage> => {
    const call = request.toolCall;
    const config = { ...(request.runtime as object), configurable: request.runtime?.configurable ?? {} } as RunnableConfig;
    const nodeCall = { id: idOf(call, config), name: call.name, args: call.args };
    const context = contextFromConfig(config, options.context);
    const mode = review ? "defer" : "wait";
    const step = (s: Parameters<typeof perform>[1]) => perform(client, s, mode, context, options.timeoutMs);
    // Each call is a task of its own: a resume value must name the call it decides when the AIMessage made several.
    const shared = lastCallCount((request.state as { messages?: unknown })?.messages) > 1;
    const conf = config.configurable as Record<string, unknown>;
    const key = JSON.stringify([conf.thread_id ?? "", conf.checkpoint_ns ?? "", nodeCall.id, nodeCall.name, call.args]);
    const [message] = await runSteps(drive([nodeCall], review, shared), step, memo, key);
    return answer({ ...call, id: nodeCall.id }, message!, options.onError);
  };
  return {
    [MIDDLEWARE_BRAND]: true,
    name: "toolgate",
    wrapToolCall,
    ...(options.tools ? { tools: options.tools } : {}),
  } as unknown as AgentMiddleware;
}

function answer(call: ToolCall, message: ToolMessage, onError: ErrorHook | undefined): LCToolMessage {
  const out = toLangChain(message, call);
  const replaced = message.error !== undefined ? onError?.(call, message) : undefined;
  if (replaced === undefined) return out;
  if (typeof replaced === "string") {
    out.content = replaced;
    return out;
  }
  return replaced;
}
