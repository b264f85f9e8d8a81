/**
 * The transcript side: a typed toolgate `ToolMessage` as a LangChain ToolMessage, and the AIMessage rewritten with
 * the calls as they ran (arguments repaired, injected parameters removed, edited by a reviewer).
 * @module
 */
import { AIMessage, ToolMessage as LCToolMessage } from "@langchain/core/messages";
import { contentOf } from "./blocks.js";
import { isObject } from "./review.js";
const TOOL_NAME_RULES = new Set(["tool_name_normalized", "tool_name_prefix", "tool_name_residue"]);
const PROVIDER_SAFE = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * A typed toolgate `ToolMessage` as a LangChain ToolMessage: `status: "error"` unless it succeeded, the typed
 * error in `additional_kwargs.error`, the repairs in `additional_kwargs.repairs`, the structured result as
 * `artifact`, a result of more than text as LangChain content blocks, and the attempts, duration and effective
 * arguments in `response_metadata.toolgate`.
 */
export function toLangChain(m, call) {
    const additional = {};
    if (m.error !== undefined)
        additional.error = { ...m.error };
    if (m.repairs.length > 0)
        additional.repairs = m.repairs.map((r) => ({ ...r }));
    return new LCToolMessage({
        content: contentOf(m),
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
/** The id of a split call's `index`-th part, as the gateway names it: the call's own id for the first, `<id>_2`,
 * `<id>_3`, ... for the others. */
export function partId(id, index) {
    return index === 0 || !id ? id : `${id}_${index + 1}`;
}
/** The tool name that ran: the repaired one when the gateway repaired the name into one a provider takes. */
function ranName(call, m) {
    return m.repairs.some((r) => TOOL_NAME_RULES.has(r.rule)) && PROVIDER_SAFE.test(m.name) ? m.name : call.name;
}
/**
 * A split call's parts as the calls the model should have made, each with its own answer. Each answer carries the
 * whole call's repairs (the `parallel_split` record among them) and then the part's own.
 */
export function splitAnswers(call, m) {
    return m.parts.map((part, i) => {
        const id = partId(call.id, i);
        const answer = {
            ...part,
            toolCallId: partId(m.toolCallId || call.id, i),
            name: m.name,
            repairs: [...m.repairs, ...part.repairs],
            durationUs: 0,
            pendingReview: false,
            parts: [],
            blocks: [],
        };
        return [{ id, name: ranName(call, m), args: part.arguments }, answer];
    });
}
/** What ran in place of each call that ran differently from what the AIMessage says: the calls (one, or the parts
 * of a split call) with their ids, names and arguments. With `splitsOnly`, only split calls. */
function ranDifferently(calls, messages, splitsOnly) {
    const ran = new Map();
    calls.forEach((call, i) => {
        const m = messages[i];
        if (m.parts.length > 0) {
            ran.set(call.id, splitAnswers(call, m).map(([part]) => part));
            return;
        }
        const args = m.arguments;
        // Not asked for, or never got as far as running (or not as an object): nothing to show instead.
        if (splitsOnly || args === null || typeof args !== "object" || Array.isArray(args))
            return;
        const name = ranName(call, m);
        if (call.invalid || !sameJson(args, call.args) || name !== call.name)
            ran.set(call.id, [{ id: call.id, name, args }]);
    });
    return ran;
}
/**
 * The AIMessage with each tool call's arguments (and a repaired tool name) as they ran, and each split call as the
 * calls it was split into (with `splitsOnly`, only those), or undefined when nothing changes. Same id, so
 * LangGraph's messages reducer replaces the original in the state.
 */
export function rewriteAiMessage(ai, calls, messages, splitsOnly = false) {
    const ran = ranDifferently(calls, messages, splitsOnly);
    if (ran.size === 0 || ai.id === undefined)
        return undefined;
    const asCall = (c) => ({ id: c.id, name: c.name, args: c.args, type: "tool_call" });
    const toolCalls = (ai.tool_calls ?? []).flatMap((tc) => {
        const done = tc.id === undefined ? undefined : ran.get(tc.id);
        return done ? done.map((c) => ({ ...tc, ...asCall(c) })) : [tc];
    });
    const invalid = [];
    for (const tc of ai.invalid_tool_calls ?? []) {
        const done = tc.id === undefined ? undefined : ran.get(tc.id);
        if (done)
            toolCalls.push(...done.map(asCall));
        else
            invalid.push(tc);
    }
    const additional = { ...ai.additional_kwargs };
    if (Array.isArray(additional.tool_calls)) {
        // The provider's raw form (OpenAI's), kept in step so a provider that resends it shows the same.
        additional.tool_calls = additional.tool_calls.flatMap((raw) => {
            const done = isObject(raw) && isObject(raw.function) ? ran.get(String(raw.id)) : undefined;
            if (!done)
                return [raw];
            const fn = raw.function;
            return done.map((c) => ({ ...raw, id: c.id, function: { ...fn, name: c.name, arguments: JSON.stringify(c.args) } }));
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
