/**
 * One node run as a sequence of steps, and the review in the middle of it.
 *
 * `drive` is a generator yielding the requests of a run: a batch (answered with its ToolMessages) and a decision
 * (answered with null, or the GatewayError it raised). `runSteps` carries them out and keeps what each step
 * answered in a `Memo`. Between the first batch and the second, calls pending review raise a LangGraph
 * `interrupt` (the payload of `INTERRUPT_TYPE`), and resume values are read into ToolReview decisions.
 * @module
 */
import { interrupt, isGraphBubbleUp } from "@langchain/langgraph";
import { GatewayError } from "../client.js";
/** The `type` of the value a review interrupt carries. */
export const INTERRUPT_TYPE = "toolgate.review";
/** The resume actions, and the ToolReview action each maps to. The gateway's own names (and LangChain v1's
 * human-in-the-loop decision types) are accepted too. */
export const RESUME_ACTIONS = {
    continue: "approve",
    update: "edit",
    feedback: "reject",
    approve: "approve",
    edit: "edit",
    reject: "reject",
};
/** Why the node interrupts again for a call it already had decided. */
export const STILL_PENDING = "The gateway answered PENDING_REVIEW again after the decision: it lost the review (restarted with a fresh " +
    "data dir?) and filed the call for review anew. Decide it again.";
// Batches interrupted for review and not yet resumed, remembered in this process; see `Memo`.
const MEMO_LIMIT = 1024;
/**
 * What each step of a batch answered so far, for batches now interrupted for review, keyed by the batch (thread,
 * namespace and the calls themselves). LangGraph runs the node again from the start on resume; the steps already
 * answered are answered from here instead of being sent again, so the calls that ran do not run again, a decision
 * is sent once, and the interrupts line up with the same pending calls. It lives in this process: a resume in
 * another process sends the batch again, which the gateway's call-id record answers without running its calls
 * again (within `[idempotency] window_ms`); reviewed calls are answered by id, never run twice.
 */
export class Memo {
    batches = new Map();
    get(key) {
        return [...(this.batches.get(key) ?? [])];
    }
    put(key, answered) {
        this.batches.delete(key);
        this.batches.set(key, [...answered]);
        while (this.batches.size > MEMO_LIMIT)
            this.batches.delete(this.batches.keys().next().value);
    }
    drop(key) {
        this.batches.delete(key);
    }
}
/** Runs `driver`, answering each step from the memo when an earlier run of the same batch answered it, else with
 * `perform`. An interrupt keeps what was answered for the resume; any other error forgets the answer that caused it. */
export async function runSteps(driver, perform, memo, key) {
    const answered = memo.get(key);
    let index = 0;
    let next = driver.next(null);
    while (!next.done) {
        let answer;
        if (index < answered.length) {
            answer = answered[index];
        }
        else {
            answer = await perform(next.value);
            answered.push(answer);
            memo.put(key, answered);
        }
        try {
            next = driver.next(answer);
        }
        catch (err) {
            if (isGraphBubbleUp(err))
                throw err;
            if (index > 0)
                memo.put(key, answered.slice(0, index));
            else
                memo.drop(key);
            throw err;
        }
        index += 1;
    }
    memo.drop(key);
    return next.value;
}
/** The answers to `calls`, in call order, as steps: the batch; then, for calls pending review (unless `review` is
 * off), a decision for each and the pending calls executed again, which answers their outcome; and again for any
 * still pending after that. `shared`: the calls are one task among others of the same AIMessage (createAgent's
 * tasks, a `Send` per call), and LangGraph hands a resume value that names no interrupt to every such task, so a
 * decision counts only where it names its call (see `resumeDecisions`). */
export function* drive(calls, review, shared = false) {
    const first = (yield { kind: "batch", calls });
    const answers = new Map(calls.map((c, i) => [c.id, first[i]]));
    let pending = review ? calls.filter((c) => answers.get(c.id).pendingReview) : [];
    let reason;
    while (pending.length > 0) {
        // No decision is sent before every pending call has one.
        const decisions = collectDecisions(pending, answers, shared, reason);
        for (const call of pending)
            yield* decide(call, decisions.get(call.id), answers, shared);
        const outcomes = (yield { kind: "batch", calls: pending });
        pending.forEach((c, i) => answers.set(c.id, outcomes[i]));
        pending = pending.filter((c) => answers.get(c.id).pendingReview);
        reason = STILL_PENDING;
    }
    return calls.map((c) => answers.get(c.id));
}
/** Sends one decision, asking again while the gateway refuses the edited arguments. */
function* decide(call, decision, answers, shared) {
    let [action, data] = decision;
    for (;;) {
        const refused = (yield { kind: "decide", callId: call.id, action, data });
        // Decided now, or before (a reviewer elsewhere): executing the call id again answers the outcome.
        if (refused === null || refused.code === "FAILED_PRECONDITION")
            return;
        if (refused.code !== "INVALID_ARGUMENT" || action !== "edit")
            throw refusal(call, refused);
        // The edited arguments do not fit the tool: ask again about this call, saying why.
        [action, data] = collectDecisions([call], answers, shared, refused.details).get(call.id);
    }
}
/** The error a refused decision raises, saying what to do about it. */
function refusal(call, refused) {
    let why;
    if (refused.code === "UNAUTHENTICATED" || refused.code === "PERMISSION_DENIED") {
        why =
            `${refused.details}. GatewayToolNode decides reviews through ToolReview, which needs the gateway's review ` +
                "(or admin) token: new Client(target, { reviewToken })";
    }
    else if (refused.code === "NOT_FOUND") {
        why =
            `${refused.details}. The gateway has no review of tool call ${JSON.stringify(call.id)} (${call.name}): it ` +
                "lost its reviews (restarted with a fresh data dir?) or dropped the decided one (review.keep_decided_s). " +
                "The call did not run, and the node does not send it again, which would file a new review";
    }
    else {
        return refused;
    }
    return new GatewayError(refused.method, refused.code, why);
}
/** Carries out one step on the client. A refused decision is answered, not thrown: the driver decides what it means. */
export async function perform(client, step, reviewMode, context, timeoutMs) {
    if (step.kind === "batch") {
        const calls = step.calls.map((c) => ({ id: c.id, name: c.name, arguments: c.args }));
        return client.executeBatch(calls, { context, reviewMode, timeoutMs });
    }
    const options = { tenant: context.tenant ?? "", timeoutMs };
    if (step.action === "edit")
        options.arguments = step.data;
    if (step.action === "reject") {
        options.feedback = step.data == null ? "" : typeof step.data === "string" ? step.data : JSON.stringify(step.data);
    }
    try {
        await client.decide(step.callId, step.action, options);
        return null;
    }
    catch (err) {
        if (err instanceof GatewayError)
            return err;
        throw err;
    }
}
// ---- interrupting, and reading the resume values ----
/** A decision for every pending call, interrupting until each has one. */
function collectDecisions(pending, answers, shared, error) {
    const decisions = new Map();
    let why = error;
    for (;;) {
        const undecided = pending.filter((c) => !decisions.has(c.id));
        if (undecided.length === 0)
            return decisions;
        const ids = undecided.map((c) => c.id);
        const value = interrupt(interruptPayload(undecided, answers, why));
        const read = resumeDecisions(value, ids, shared);
        for (const [callId, decision] of read) {
            if (!decisions.has(callId))
                decisions.set(callId, decision);
        }
        if (shared && !ids.some((id) => read.has(id)))
            why = unnamed(value, ids);
    }
}
/** Why a shared task asks again: the resume value did not name its call. */
function unnamed(value, ids) {
    return (`this resume value names no decision for tool call ${JSON.stringify(ids[0])}: ${JSON.stringify(value)}. The ` +
        "calls of this AIMessage wait for review as separate interrupts, and a value that names no interrupt reaches " +
        "them all: resume with Command({ resume: { [interrupt.id]: decision } }) and a decision that names its call, " +
        `{ action, data, tool_call_id: ${JSON.stringify(ids[0])} }, or { ${JSON.stringify(ids[0])}: decision }`);
}
/** What the interrupt carries: the first undecided call at the top level, all of them in `pending` (the Python
 * node's payload), and the same calls as LangChain v1's human-in-the-loop request (`actionRequests`). */
export function interruptPayload(undecided, answers, error) {
    const pending = undecided.map((call) => {
        const answer = answers.get(call.id);
        return {
            tool_call_id: call.id,
            name: answer.name || call.name,
            args: answer.effectiveArguments ? answer.arguments : call.args,
            content: answer.content,
            repairs: answer.repairs.map((r) => ({ ...r })),
        };
    });
    return {
        type: INTERRUPT_TYPE,
        ...pending[0],
        pending,
        actions: ["continue", "update", "feedback"],
        actionRequests: pending.map((p) => ({ name: p.name, args: p.args, description: p.content })),
        reviewConfigs: [...new Set(pending.map((p) => p.name))].map((actionName) => ({
            actionName,
            allowedDecisions: ["approve", "edit", "reject"],
        })),
        ...(error === undefined ? {} : { error }),
    };
}
/**
 * Reads a resume value: a decision (`{action, data}`, or LangChain v1's `{type, ...}`) for the first undecided call,
 * an array of them for the undecided calls in order, LangChain v1's `{decisions: [...]}` likewise, or an object of
 * them keyed by tool call id. A decision with a `tool_call_id` is for that call wherever it stands. When `shared`
 * (see `drive`), only decisions that name their call count: the others are left out, and the call is asked again.
 */
export function resumeDecisions(value, undecided, shared = false) {
    const out = new Map();
    const inOrder = (list) => list.forEach((d, i) => {
        const named = isObject(d) && typeof d.tool_call_id === "string" ? d.tool_call_id : undefined;
        const callId = named ?? (shared ? undefined : undecided[i]);
        if (callId !== undefined && !out.has(callId))
            out.set(callId, decisionOf(d));
    });
    if (isObject(value) && ("action" in value || "type" in value)) {
        inOrder([value]);
    }
    else if (isObject(value) && Array.isArray(value.decisions)) {
        inOrder(value.decisions);
    }
    else if (Array.isArray(value)) {
        inOrder(value);
    }
    else if (isObject(value)) {
        for (const [callId, d] of Object.entries(value))
            out.set(callId, decisionOf(d));
    }
    else {
        throw new TypeError('resume a toolgate review with {action: "continue" | "update" | "feedback", data}, an array of those, an ' +
            `object of them keyed by tool call id, or {decisions: [...]}; got ${JSON.stringify(value)}`);
    }
    return out;
}
function decisionOf(value) {
    if (!isObject(value) || !("action" in value || "type" in value)) {
        throw new TypeError(`a review decision is {action, data} or {type, ...}, got ${JSON.stringify(value)}`);
    }
    const given = String(value.action ?? value.type).toLowerCase();
    const action = RESUME_ACTIONS[given];
    if (action === undefined) {
        throw new TypeError(`a review action is continue, update or feedback, not ${JSON.stringify(given)}`);
    }
    let data = value.data;
    if ("type" in value && !("action" in value)) {
        // LangChain v1: {type: "edit", editedAction: {name, args}}, {type: "reject", message}.
        data = action === "edit" ? value.editedAction?.args : value.message;
    }
    if (action === "edit" && !(isObject(data) || typeof data === "string")) {
        throw new TypeError(`an update needs the new arguments as data (an object), got ${JSON.stringify(data)}`);
    }
    return [action, data];
}
/** A plain object (not null, not an array). */
export function isObject(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}
