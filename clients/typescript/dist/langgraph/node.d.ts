/**
 * `GatewayToolNode`: LangGraph.js's `ToolNode` with every call run by the gateway. It reads the tool calls out of
 * the graph's input, runs them with the steps of `review.ts`, and answers the LangChain messages of `transcript.ts`.
 * @module
 */
import { AIMessage, type ToolCall, ToolMessage as LCToolMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import type { Client } from "../client.js";
import type { ToolMessage } from "../types.js";
import { type ContextSource } from "./binding.js";
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
export declare class GatewayToolNode extends ToolNode {
    readonly client: Client;
    readonly messagesKey: string;
    readonly rewriteTranscript: boolean;
    readonly onError: ErrorHook | undefined;
    readonly context: ContextSource;
    readonly review: boolean;
    readonly timeoutMs: number | undefined;
    private readonly memo;
    constructor(client: Client, options?: GatewayToolNodeOptions);
    /** A node carrying the gateway's tools (as the context's tenant sees them), for prebuilt agents to bind. */
    static create(client: Client, options?: GatewayToolNodeOptions): Promise<GatewayToolNode>;
    protected run(input: unknown, config: RunnableConfig): Promise<any>;
    private messagesOf;
    private execute;
    private toolMessage;
}
/**
 * `ai` with an id on each tool call (and each named invalid tool call) that has none. A generated id is the same on
 * every run of the node over the same message (a review's resume runs it again): `toolgate_<message id>_<index>`,
 * or, for a message without an id, a digest of the message, its place in the input and the thread. Refuses an id
 * that two calls share: the gateway answers a reviewed call by its id, so the second would get the first's outcome.
 */
export declare function withCallIds(ai: AIMessage, position: number, config: RunnableConfig): AIMessage;
/** A call's id, or one made for it, the same on every run over the same call in the same thread: the gateway files
 * a review, and answers a call sent again, by its id. */
export declare function idOf(call: {
    id?: string;
    name: string;
    args?: unknown;
}, config: RunnableConfig): string;
/** How many tool calls the last AIMessage among `messages` makes. */
export declare function lastCallCount(messages: unknown): number;
