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
import { contextFromConfig } from "./binding.js";
import { withCallIds } from "./node.js";
import { isObject } from "./review.js";
/** Where `readTextCalls` writes how the calls were read: `{ envelope, wrappers, format, text }`, `text` being
 * the content as the model wrote it. */
export const TEXT_CALLS_KEY = "toolgate_calls_from_text";
// The brand langchain's createMiddleware puts on a middleware (a global symbol), so this module needs langchain
// only for its types.
const MIDDLEWARE_BRAND = Symbol.for("AgentMiddleware");
/** The text of an AIMessage's content: the string, or its text blocks joined (as LangChain's `message.text`). */
function textOf(content) {
    if (typeof content === "string")
        return content;
    return content.map((b) => (isObject(b) && b.type === "text" && typeof b.text === "string" ? b.text : "")).join("");
}
/** `content` with its text replaced by `rest`: a string, or the blocks with the first text block holding `rest`
 * (dropped when empty), the other text blocks left out and every other block kept. */
function withText(content, rest) {
    if (typeof content === "string")
        return rest;
    let placed = false;
    return content.flatMap((b) => {
        if (!(isObject(b) && b.type === "text" && typeof b.text === "string"))
            return [b];
        if (placed || rest === "")
            return [];
        placed = true;
        return [{ ...b, text: rest }];
    });
}
/**
 * `ai` answered again with the calls its text holds, as the gateway reads them: each call as a tool call (name as
 * written, arguments parsed; arguments that are not an object as an invalid tool call, which `GatewayToolNode`
 * sends to the gateway as written), ids `toolgate_<message id>_<i>` as `withCallIds` gives them, and the content
 * the text without the calls (`rest`). `additional_kwargs.toolgate_calls_from_text` keeps the envelope, the
 * wrappers, the format read and the text as written. Undefined (leave the message as it is, so the turn ends as
 * text) when `ai` already makes calls, has no text, or the gateway took none: a call only shown, quoted,
 * offered, refused, supposed or remembered, or of a tool not offered (`refusal` says why).
 */
export async function readTextCalls(client, ai, options = {}, config = {}, position = 0) {
    if (!AIMessage.isInstance(ai))
        return undefined;
    if ((ai.tool_calls?.length ?? 0) > 0 || (ai.invalid_tool_calls?.length ?? 0) > 0)
        return undefined;
    const text = textOf(ai.content);
    if (text.trim() === "")
        return undefined;
    const context = contextFromConfig(config, options.context);
    const model = options.format ? undefined : modelOf(ai);
    const asked = { context, tools: options.tools, timeoutMs: options.timeoutMs, format: options.format, model };
    const found = await client.callsFromText(text, asked);
    if (found.calls.length === 0)
        return undefined;
    return withCallIds(asCalls(ai, text, found), position, config);
}
/** The name of the chat model that wrote `ai`, as LangChain.js's integrations record it in `response_metadata`
 * (`model_name`: OpenAI, Groq, Mistral; `model`: Anthropic, Ollama). */
export function modelOf(ai) {
    const metadata = ai.response_metadata ?? {};
    const name = metadata.model_name ?? metadata.model;
    return typeof name === "string" ? name : undefined;
}
function asCalls(ai, text, found) {
    const toolCalls = [];
    const invalid = [];
    for (const call of found.calls) {
        if (isObject(call.args)) {
            toolCalls.push({ name: call.name, args: call.args, type: "tool_call" });
        }
        else {
            const error = "the arguments written are not an object; the gateway repairs or refuses them when the call runs";
            invalid.push({ name: call.name, args: call.arguments, error, type: "invalid_tool_call" });
        }
    }
    return new AIMessage({
        id: ai.id,
        name: ai.name,
        content: withText(ai.content, found.rest),
        tool_calls: toolCalls,
        invalid_tool_calls: invalid,
        additional_kwargs: {
            ...ai.additional_kwargs,
            [TEXT_CALLS_KEY]: { envelope: found.envelope, wrappers: [...found.wrappers], format: found.format, text },
        },
        response_metadata: ai.response_metadata,
        usage_metadata: ai.usage_metadata,
    });
}
/** The state update that answers the last message again with the calls its text holds; undefined for none. */
async function update(client, messages, config, options) {
    if (!Array.isArray(messages) || messages.length === 0)
        return undefined;
    const last = messages.at(-1);
    if (!AIMessage.isInstance(last))
        return undefined;
    const rewritten = await readTextCalls(client, last, options, config, messages.length - 1);
    // Same id, so LangGraph's messages reducer replaces the model's message in the state.
    return rewritten?.id === undefined ? undefined : rewritten;
}
/**
 * Middleware for LangChain v1's `createAgent({ model, tools, middleware })`: after each model call, an AIMessage
 * that makes no calls but writes some in its text is answered again with them as tool calls (see
 * `readTextCalls`), so the agent routes to its tools instead of ending. Give it with `toolgateMiddleware`, which
 * sends each call to the gateway as written (the gateway resolves `functions.get_weather` and repairs the
 * arguments); without it, the agent's own tool of that name runs.
 */
export function textCallsMiddleware(client, options = {}) {
    const afterModel = async (state, runtime) => {
        const config = { configurable: runtime?.configurable ?? {} };
        const message = await update(client, state?.messages, config, options);
        return message === undefined ? undefined : { messages: [message] };
    };
    return {
        [MIDDLEWARE_BRAND]: true,
        name: "toolgate_text_calls",
        afterModel,
    };
}
/**
 * A graph node doing what `textCallsMiddleware` does: LangGraph.js's `createReactAgent({ llm, tools,
 * postModelHook: textCallsHook(client) })`, or a node of one's own between the model and the tools. It answers the
 * last AIMessage again with the calls its text holds, or nothing.
 */
export function textCallsHook(client, options = {}) {
    const key = options.messagesKey ?? "messages";
    return async (state, config = {}) => {
        const message = await update(client, state?.[key], config, options);
        return message === undefined ? {} : { [key]: [message] };
    };
}
