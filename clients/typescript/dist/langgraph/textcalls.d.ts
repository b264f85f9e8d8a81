/**
 * Calls a model wrote in its text instead of making them (Hermes `<tool_call>`, pythonic `[f(a=1)]`, Llama,
 * Mistral, gpt-oss harmony, ...): the gateway's `CallsFromText` reads them, and the AIMessage is answered again
 * carrying them as tool calls, so the agent routes to its tools instead of ending. `textCallsMiddleware` does it
 * for LangChain v1's `createAgent` (an `afterModel` hook), `textCallsHook` for LangGraph.js's `createReactAgent`
 * (its `postModelHook`) or any graph, and `readTextCalls` for one message. Reading, repair and validation are the
 * gateway's: nothing here parses a call.
 * @module
 */
import { AIMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { AgentMiddleware } from "langchain";
import type { Client } from "../client.js";
import { type ContextSource } from "./binding.js";
export interface TextCallsOptions {
    /** The defaults the run's `configurable` completes (tenant, userId, sessionId, values): the tools the gateway
     * reads calls of are those the context's tenant sees. */
    context?: ContextSource;
    /** The registered names of the tools the model was offered; calls of others are not read. By default every tool
     * the context's tenant sees. */
    tools?: readonly string[];
    /** Each request's deadline. */
    timeoutMs?: number;
    /** The state key holding the messages (default `messages`), for `textCallsHook`. */
    messagesKey?: string;
    /** The model's output format (`hermes`, `qwen3_coder_xml`, `llama3_json`, `llama3_python_tag`, `mistral`,
     * `harmony`, `pythonic`, `json` or `auto`). By default the chat model's name is sent with each text (the
     * AIMessage's `response_metadata.model_name` or `.model`), and the gateway reads the format of its family, or
     * every format for a family it does not know. */
    format?: string;
}
/** Where `readTextCalls` writes how the calls were read: `{ envelope, wrappers, format, text }`, `text` being
 * the content as the model wrote it. */
export declare const TEXT_CALLS_KEY = "toolgate_calls_from_text";
/**
 * `ai` answered again with the calls its text holds, as the gateway reads them: each call as a tool call (name as
 * written, arguments parsed; arguments that are not an object as an invalid tool call, which `GatewayToolNode`
 * sends to the gateway as written), ids `toolgate_<message id>_<i>` as `withCallIds` gives them, and the content
 * the text without the calls (`rest`). `additional_kwargs.toolgate_calls_from_text` keeps the envelope, the
 * wrappers, the format read and the text as written. Undefined (leave the message as it is, so the turn ends as
 * text) when `ai` already makes calls, has no text, or the gateway took none: a call only shown, quoted,
 * offered, refused, supposed or remembered, or of a tool not offered (`refusal` says why).
 */
export declare function readTextCalls(client: Client, ai: AIMessage, options?: TextCallsOptions, config?: RunnableConfig, position?: number): Promise<AIMessage | undefined>;
/** The name of the chat model that wrote `ai`, as LangChain.js's integrations record it in `response_metadata`
 * (`model_name`: OpenAI, Groq, Mistral; `model`: Anthropic, Ollama). */
export declare function modelOf(ai: AIMessage): string | undefined;
/**
 * Middleware for LangChain v1's `createAgent({ model, tools, middleware })`: after each model call, an AIMessage
 * that makes no calls but writes some in its text is answered again with them as tool calls (see
 * `readTextCalls`), so the agent routes to its tools instead of ending. Give it with `toolgateMiddleware`, which
 * sends each call to the gateway as written (the gateway resolves `functions.get_weather` and repairs the
 * arguments); without it, the agent's own tool of that name runs.
 */
export declare function textCallsMiddleware(client: Client, options?: TextCallsOptions): AgentMiddleware;
/**
 * A graph node doing what `textCallsMiddleware` does: LangGraph.js's `createReactAgent({ llm, tools,
 * postModelHook: textCallsHook(client) })`, or a node of one's own between the model and the tools. It answers the
 * last AIMessage again with the calls its text holds, or nothing.
 */
export declare function textCallsHook(client: Client, options?: TextCallsOptions): (state: Record<string, any>, config?: RunnableConfig) => Promise<Record<string, AIMessage[]>>;
