/**
 * `GatewayToolNode`: LangGraph.js's `ToolNode` with every call run by the gateway. It reads the tool calls out of
 * the graph's input, runs them with the steps of `review.ts`, and answers the LangChain messages of `transcript.ts`.
 * @module
 */
import { createHash } from "node:crypto";
import { AIMessage, ToolMessage as LCToolMessage } from "@langchain/core/messages";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { contextFromConfig, gatewayTools } from "./binding.js";
import { drive, isObject, Memo, perform, runSteps } from "./review.js";
import { rewriteAiMessage, splitAnswers, toLangChain, withCalls } from "./transcript.js";
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
    client;
    messagesKey;
    rewriteTranscript;
    onError;
    context;
    review;
    timeoutMs;
    memo = new Memo();
    constructor(client, options = {}) {
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
    static async create(client, options = {}) {
        const context = typeof options.context === "function" ? undefined : options.context;
        const tools = options.tools ?? (await gatewayTools(client, { context, timeoutMs: options.timeoutMs }));
        return new GatewayToolNode(client, { ...options, tools });
    }
    async run(input, config) {
        if (isObject(input) && "lg_tool_call" in input) {
            // One call sent on its own (createReactAgent's version "v2"), a task beside the other calls' tasks.
            const call = input.lg_tool_call;
            const nodeCall = { id: idOf(call, config), name: call.name, args: call.args };
            const shared = lastCallCount(input[this.messagesKey]) > 1;
            const [message] = await this.execute([nodeCall], config, shared);
            return { [this.messagesKey]: [this.toolMessage(nodeCall, message)] };
        }
        const messages = this.messagesOf(input);
        const { ai, calls, idsGiven } = parseCalls(messages, config);
        const answers = calls.length > 0 ? await this.execute(calls, config) : [];
        // A packed parallel call the gateway split: one ToolMessage per call it was split into, written into the
        // AIMessage too. Given a list of messages, the node cannot rewrite the AIMessage: there the split call gets one
        // ToolMessage, whose content gives every part's result.
        const asList = Array.isArray(input);
        const toolMessages = calls.flatMap((call, i) => {
            const answer = answers[i];
            const parts = answer.parts.length > 0 && !asList ? splitAnswers(call, answer) : [[call, answer]];
            return parts.map(([c, m]) => this.toolMessage(c, m));
        });
        if (asList)
            return toolMessages;
        const split = answers.some((m) => m.parts.length > 0);
        // A split call is always written out as its parts, so that each ToolMessage answers a call the AIMessage
        // carries, even with `rewriteTranscript` off.
        const rewrite = (this.rewriteTranscript || split) && calls.length > 0;
        let rewritten = rewrite ? rewriteAiMessage(ai, calls, answers, !this.rewriteTranscript) : undefined;
        // The ids the node gave the calls, so that each ToolMessage answers a call the AIMessage carries.
        if (rewritten === undefined && idsGiven && ai.id !== undefined)
            rewritten = ai;
        return { [this.messagesKey]: rewritten ? [rewritten, ...toolMessages] : toolMessages };
    }
    messagesOf(input) {
        if (Array.isArray(input))
            return input;
        const messages = isObject(input) ? input[this.messagesKey] : undefined;
        if (!Array.isArray(messages)) {
            throw new TypeError(`GatewayToolNode takes a list of messages or a state with "${this.messagesKey}"`);
        }
        return messages;
    }
    async execute(calls, config, shared = false) {
        const context = contextFromConfig(config, this.context);
        const mode = this.review ? "defer" : "wait";
        const step = (s) => perform(this.client, s, mode, context, this.timeoutMs);
        return runSteps(drive(calls, this.review, shared), step, this.memo, batchKey(config, calls));
    }
    toolMessage(call, message) {
        const out = toLangChain(message, call);
        if (message.error === undefined || this.onError === undefined)
            return out;
        const toolCall = { id: call.id, name: call.name, args: call.args, type: "tool_call" };
        const replaced = this.onError(toolCall, message);
        if (replaced instanceof LCToolMessage)
            return replaced;
        if (replaced !== undefined)
            out.content = String(replaced);
        return out;
    }
}
/** The last AIMessage (its calls given ids where they had none) and its calls not answered yet, invalid calls
 * included: the gateway repairs arguments that did not parse. */
function parseCalls(messages, config) {
    const position = lastAiIndex(messages);
    if (position < 0)
        throw new TypeError("GatewayToolNode found no AIMessage in its input");
    const written = messages[position];
    const ai = withCallIds(written, position, config);
    const answered = new Set(messages.filter((m) => LCToolMessage.isInstance(m)).map((m) => m.tool_call_id));
    const calls = [
        ...(ai.tool_calls ?? []).map((c) => ({ id: c.id, name: c.name, args: c.args })),
        ...(ai.invalid_tool_calls ?? [])
            .filter((c) => c.name)
            .map((c) => ({ id: c.id, name: c.name, args: c.args ?? "", invalid: true })),
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
export function withCallIds(ai, position, config) {
    const invalid = (ai.invalid_tool_calls ?? []).filter((c) => c.name);
    const given = [...(ai.tool_calls ?? []).map((c) => c.id), ...invalid.map((c) => c.id)];
    const seen = new Set();
    for (const id of given) {
        if (!id)
            continue;
        if (seen.has(id)) {
            throw new Error(`the AIMessage ${JSON.stringify(ai.id)} has two tool calls with the id ${JSON.stringify(id)}: each call needs its own id`);
        }
        seen.add(id);
    }
    if (given.every((id) => id))
        return ai;
    let base;
    if (ai.id) {
        base = ai.id.replace(ID_UNSAFE, "_");
    }
    else {
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
export function idOf(call, config) {
    if (call.id)
        return call.id;
    const conf = config.configurable ?? {};
    const seed = JSON.stringify([conf.thread_id, conf.checkpoint_ns, call.name, call.args]);
    return `toolgate_${createHash("sha256").update(seed).digest("hex").slice(0, 16)}`;
}
/** Where the last AIMessage among `messages` stands; -1 when there is none. */
function lastAiIndex(messages) {
    for (let i = messages.length - 1; i >= 0; i -= 1) {
        if (AIMessage.isInstance(messages[i]))
            return i;
    }
    return -1;
}
/** How many tool calls the last AIMessage among `messages` makes. */
export function lastCallCount(messages) {
    const position = Array.isArray(messages) ? lastAiIndex(messages) : -1;
    return position < 0 ? 0 : (messages[position].tool_calls?.length ?? 0);
}
function batchKey(config, calls) {
    const conf = config.configurable ?? {};
    const signature = calls.map((c) => [c.id, c.name, JSON.stringify(c.args ?? null)]);
    return JSON.stringify([String(conf.thread_id ?? ""), String(conf.checkpoint_ns ?? ""), signature]);
}
