/**
 * `toolgateMiddleware`: LangChain v1 agent middleware (`createAgent({ middleware })`) whose `wrapToolCall` sends
 * each call to the gateway as the model wrote it, before the host's own schema check can reject it.
 * @module
 */
import { contextFromConfig } from "./binding.js";
import { idOf, lastCallCount } from "./node.js";
import { drive, Memo, perform, runSteps } from "./review.js";
import { toLangChain } from "./transcript.js";
// The brand langchain's createMiddleware puts on a middleware (a global symbol), so this module needs langchain
// only for its types: an agent without createAgent never loads it.
const MIDDLEWARE_BRAND = Symbol.for("AgentMiddleware");
/**
 * A middleware that runs every tool call of a `createAgent` agent through the gateway: the call (repaired,
 * validated, injected, reviewed) answers one LangChain ToolMessage, with the typed error in
 * `additional_kwargs.error` when it failed. The agent's own tools are not invoked, so their schemas never reject
 * a call the gateway would repair. Each call is one `Execute` with the tool call's id.
 */
export function toolgateMiddleware(client, options = {}) {
    const memo = new Memo();
    const review = options.review ?? true;
    const wrapToolCall = async (request) => {
        const call = request.toolCall;
        const config = { ...request.runtime, configurable: request.runtime?.configurable ?? {} };
        const nodeCall = { id: idOf(call, config), name: call.name, args: call.args };
        const context = contextFromConfig(config, options.context);
        const mode = review ? "defer" : "wait";
        const step = (s) => perform(client, s, mode, context, options.timeoutMs);
        // Each call is a task of its own: a resume value must name the call it decides when the AIMessage made several.
        const shared = lastCallCount(request.state?.messages) > 1;
        const conf = config.configurable;
        const key = JSON.stringify([conf.thread_id ?? "", conf.checkpoint_ns ?? "", nodeCall.id, nodeCall.name, call.args]);
        const [message] = await runSteps(drive([nodeCall], review, shared), step, memo, key);
        return answer({ ...call, id: nodeCall.id }, message, options.onError);
    };
    return {
        [MIDDLEWARE_BRAND]: true,
        name: "toolgate",
        wrapToolCall,
        ...(options.tools ? { tools: options.tools } : {}),
    };
}
function answer(call, message, onError) {
    const out = toLangChain(message, call);
    const replaced = message.error !== undefined ? onError?.(call, message) : undefined;
    if (replaced === undefined)
        return out;
    if (typeof replaced === "string") {
        out.content = replaced;
        return out;
    }
    return replaced;
}
