/**
 * What a run brings from outside the node: the chat model bound to the gateway's model-facing definitions, the
 * gateway's tools as LangChain tools, and the CallContext read from LangGraph's RunnableConfig.
 * @module
 */

import type { ToolCall } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { type StructuredToolInterface, tool } from "@langchain/core/tools";
import type { Client } from "../client.js";
import type { CallContext } from "../types.js";
import { contentOf } from "./blocks.js";
import { toLangChain } from "./transcript.js";

/** A context, or a function of the run's config giving one: the defaults the run's `configurable` completes. */
export type ContextSource = CallContext | ((config: RunnableConfig) => CallContext | undefined) | undefined;

/**
 * The CallContext of a run: `configurable.tenant`, `configurable.user_id` (or `userId`), and
 * `configurable.session_id` (or `sessionId`, else `thread_id`), each over the same field of `defaults`;
 * `configurable.toolgate_values` (an object) is added to the default's values. Never from the model.
 */
export function contextFromConfig(config: RunnableConfig | undefined, defaults: ContextSource = undefined): CallContext {
  const base = (typeof defaults === "function" ? defaults(config ?? {}) : defaults) ?? {};
  const conf = (config?.configurable ?? {}) as Record<string, unknown>;
  const text = (...values: unknown[]) => {
    const found = values.find((v) => v !== undefined && v !== null && v !== "");
    return found === undefined ? undefined : String(found);
  };
  const values: Record<string, string> = { ...base.values };
  const extra = conf.toolgate_values;
  if (extra !== null && typeof extra === "object") {
    for (const [k, v] of Object.entries(extra)) values[k] = String(v);
  }
  return {
    tenant: text(conf.tenant, base.tenant) ?? "",
    userId: text(conf.user_id, conf.userId, base.userId) ?? "",
    sessionId: text(conf.session_id, conf.sessionId, conf.thread_id, base.sessionId) ?? "",
    values,
  };
}

/** A chat model that can be bound to tool definitions. */
export interface BindsTools<R> {
  bindTools(tools: Record<string, unknown>[], kwargs?: Record<string, unknown>): R;
}

/**
 * `model.bindTools(...)` with the gateway's definitions in OpenAI form, as the context's tenant sees them
 * (injected parameters left out). `kwargs` goes to `bindTools` (e.g. `tool_choice`).
 */
export async function bindGatewayTools<R>(
  model: BindsTools<R>,
  client: Client,
  options: { context?: CallContext; kwargs?: Record<string, unknown> } = {},
): Promise<R> {
  const definitions = await client.listToolDefinitions("openai", { context: options.context });
  return model.bindTools(
    definitions.map((d) => d.definition),
    options.kwargs,
  );
}

interface OpenAiFunction {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

/**
 * The gateway's tools, as the context's tenant sees them, as LangChain tools: what `createReactAgent` and
 * `createAgent` bind the model to. Invoked on their own, each runs its call through the gateway (and answers a
 * LangChain ToolMessage, error or not); `GatewayToolNode` and `toolgateMiddleware` send the call to the gateway
 * without invoking them, so the host never checks the arguments before the gateway repairs them.
 */
export async function gatewayTools(
  client: Client,
  options: { context?: CallContext; timeoutMs?: number } = {},
): Promise<StructuredToolInterface[]> {
  const definitions = await client.listToolDefinitions("openai", { context: options.context });
  return definitions.map((d) => {
    const fn = (d.definition as { function: OpenAiFunction }).function;
    return tool(
      async (input: unknown, config?: RunnableConfig & { toolCall?: ToolCall }) => {
        const call = config?.toolCall;
        const context = contextFromConfig(config, options.context);
        const message = await client.execute(fn.name, input, { id: call?.id, context, timeoutMs: options.timeoutMs });
        return call ? toLangChain(message, call) : contentOf(message);
      },
      {
        name: fn.name,
        description: fn.description ?? "",
        schema: (fn.parameters ?? { type: "object", properties: {} }) as Record<string, unknown>,
      },
    ) as unknown as StructuredToolInterface;
  });
}
