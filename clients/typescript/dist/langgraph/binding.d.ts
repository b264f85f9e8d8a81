/**
 * What a run brings from outside the node: the chat model bound to the gateway's model-facing definitions, the
 * gateway's tools as LangChain tools, and the CallContext read from LangGraph's RunnableConfig.
 * @module
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { type StructuredToolInterface } from "@langchain/core/tools";
import type { Client } from "../client.js";
import type { CallContext } from "../types.js";
/** A context, or a function of the run's config giving one: the defaults the run's `configurable` completes. */
export type ContextSource = CallContext | ((config: RunnableConfig) => CallContext | undefined) | undefined;
/**
 * The CallContext of a run: `configurable.tenant`, `configurable.user_id` (or `userId`), and
 * `configurable.session_id` (or `sessionId`, else `thread_id`), each over the same field of `defaults`;
 * `configurable.toolgate_values` (an object) is added to the default's values. Never from the model.
 */
export declare function contextFromConfig(config: RunnableConfig | undefined, defaults?: ContextSource): CallContext;
/** A chat model that can be bound to tool definitions. */
export interface BindsTools<R> {
    bindTools(tools: Record<string, unknown>[], kwargs?: Record<string, unknown>): R;
}
/**
 * `model.bindTools(...)` with the gateway's definitions in OpenAI form, as the context's tenant sees them
 * (injected parameters left out). `kwargs` goes to `bindTools` (e.g. `tool_choice`).
 */
export declare function bindGatewayTools<R>(model: BindsTools<R>, client: Client, options?: {
    context?: CallContext;
    kwargs?: Record<string, unknown>;
}): Promise<R>;
/**
 * The gateway's tools, as the context's tenant sees them, as LangChain tools: what `createReactAgent` and
 * `createAgent` bind the model to. Invoked on their own, each runs its call through the gateway (and answers a
 * LangChain ToolMessage, error or not); `GatewayToolNode` and `toolgateMiddleware` send the call to the gateway
 * without invoking them, so the host never checks the arguments before the gateway repairs them.
 */
export declare function gatewayTools(client: Client, options?: {
    context?: CallContext;
    timeoutMs?: number;
}): Promise<StructuredToolInterface[]>;
