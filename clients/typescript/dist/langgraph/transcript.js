/**
 * The transcript side: a typed toolgate `ToolMessage` as a LangChain ToolMessage, and the AIMessage rewritten with
 * the calls as they ran (arguments repaired, injected parameters removed, edited by a reviewer).
 * @module
 */
import { AIMessage, ToolMessage as LCToolMessage } from "@langchain/core/messages";
import { isObject } from "./review.js";
const TOOL_NAME_RULES = new Set(["tool_name_normalized", "tool_name_prefix", "tool_name_residue"]);
const PROVIDER_SAFE = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * A typed toolgate `ToolMessage` as a LangChain ToolMessage: `status: "error"` unless it succeeded, the typed
 * error in `additional_kwargs.error`, the repairs in `additional_kwargs.repairs`, the structured result as
 * `artifact`, and the attempts, duration and effective arguments in `response_metadata.toolgate`.
 */
export function toLangChain(m, call) {
    const additional = {};
    if (m.error !== undefined)
        additional.error = { ...m.error };
    if (m.repairs.length > 0)
        additional.repairs = m.repairs.map((r) => ({ ...r }));
    return new LCToolMessage({
        content: m.content,
        tool_call_id: m.toolCallId || call?.id || "",
        name: m.name || call?.name,
        status: m.ok ? "success" : "error",
        artifact: m.structured,
        additional_kwargs: additional,
        response_metadata: {
            toolgate: {
                status: m.status,
                attempts: m.attempts,
                duration_us: m.durationUs,
                effective_arguments: m.arguments,
            },
        },
    });
}
function sameJson(a, b) {
    return JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));
}
function sorted(value) {
    if (Array.isArray(value))
        return value.map(sorted);
    if (value !== null && typeof value === "object") {
        return Object.fromEntries(Object.keys(value)
            .sort()
            .map((k) => [k, sorted(value[k])]));
    }
    return value;
}
/** What ran for each call that ran differently from what the AIMessage says: its name and arguments. */
function ranDifferently(calls, messages) {
    const ran = new Map();
    calls.forEach((call, i) => {
        const m = messages[i];
        const args = m.arguments;
        // Never got as far as running (or not as an object): nothing to show instead.
        if (args === null || typeof args !== "object" || Array.isArray(args))
            return;
        let name = call.name;
        if (m.repairs.some((r) => TOOL_NAME_RULES.has(r.rule)) && PROVIDER_SAFE.test(m.name))
            name = m.name;
        if (call.invalid || !sameJson(args, call.args) || name !== call.name) {
            ran.set(call.id, [name, args]);
        }
    });
    return ran;
}
/**
 * The AIMessage with each tool call's arguments (and a repaired tool name) as they ran, or undefined when all ran
 * as written. Same id, so LangGraph's messages reducer replaces the original in the state.
 */
export function rewriteAiMessage(ai, calls, messages) {
    const ran = ranDifferently(calls, messages);
    if (ran.size === 0 || ai.id === undefined)
        return undefined;
    const toolCalls = (ai.tool_calls ?? []).map((tc) => {
        const done = tc.id === undefined ? undefined : ran.get(tc.id);
        return done ? { ...tc, name: done[0], args: done[1] } : tc;
    });
    const invalid = [];
    for (const tc of ai.invalid_tool_calls ?? []) {
        const done = tc.id === undefined ? undefined : ran.get(tc.id);
        if (done)
            toolCalls.push({ name: done[0], args: done[1], id: tc.id, type: "tool_call" });
        else
            invalid.push(tc);
    }
    const additional = { ...ai.additional_kwargs };
    if (Array.isArray(additional.tool_calls)) {
        // The provider's raw form (OpenAI's), kept in step so a provider that resends it shows the same.
        additional.tool_calls = additional.tool_calls.map((raw) => {
            const done = isObject(raw) && isObject(raw.function) ? ran.get(String(raw.id)) : undefined;
            return done ? { ...raw, function: { ...raw.function, name: done[0], arguments: JSON.stringify(done[1]) } } : raw;
        });
    }
    return withCalls(ai, toolCalls, invalid, additional);
}
/** A copy of `ai` (same id) carrying these calls. */
export function withCalls(ai, toolCalls, invalid, additional = ai.additional_kwargs) {
    return new AIMessage({
        id: ai.id,
        name: ai.name,
        content: ai.content,
        tool_calls: toolCalls,
        invalid_tool_calls: invalid,
        additional_kwargs: additional,
        response_metadata: ai.response_metadata,
        usage_metadata: ai.usage_metadata,
    });
}
