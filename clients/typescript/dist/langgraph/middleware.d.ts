/**
 * `toolgateMiddleware`: LangChain v1 agent middleware (`createAgent({ middleware })`) whose `wrapToolCall` sends
 * each call to the gateway as the model wrote it, before the host's own schema check can reject it.
 * @module
 */
import type { StructuredToolInterface } from "@langchain/core/tools";
import type { AgentMiddleware } from "langchain";
import type { Client } from "../client.js";
import { type ContextSource } from "./binding.js";
import { type ErrorHook } from "./node.js";
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
/**
 * A middleware that runs every tool call of a `createAgent` agent through the gateway: the call (repaired,
 * validated, injected, reviewed) answers one LangChain ToolMessage, with the typed error in
 * `additional_kwargs.error` when it failed. The agent's own tools are not invoked, so their schemas never reject
 * a call the gateway would repair. Each call is one `Execute` with the tool call's id.
 */
export declare function toolgateMiddleware(client: Client, options?: ToolgateMiddlewareOptions): AgentMiddleware;
