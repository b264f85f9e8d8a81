/**
 * One node run as a sequence of steps, and the review in the middle of it.
 *
 * `drive` is a generator yielding the requests of a run: a batch (answered with its ToolMessages) and a decision
 * (answered with null, or the GatewayError it raised). `runSteps` carries them out and keeps what each step
 * answered in a `Memo`. Between the first batch and the second, calls pending review raise a LangGraph
 * `interrupt` (the payload of `INTERRUPT_TYPE`), and resume values are read into ToolReview decisions.
 * @module
 */
import { type Client, GatewayError } from "../client.js";
import type { CallContext, ReviewAction, ToolMessage } from "../types.js";
/** The `type` of the value a review interrupt carries. */
export declare const INTERRUPT_TYPE = "toolgate.review";
/** The resume actions, and the ToolReview action each maps to. The gateway's own names (and LangChain v1's
 * human-in-the-loop decision types) are accepted too. */
export declare const RESUME_ACTIONS: Readonly<Record<string, ReviewAction>>;
/** Why the node interrupts again for a call it already had decided. */
export declare const STILL_PENDING: string;
/** A call as the node sends it: LangChain's tool call, with its id always set. */
export interface NodeCall {
    id: string;
    name: string;
    /** An object, or the raw text of arguments that did not parse (an invalid tool call). */
    args: unknown;
    /** The call came from `invalid_tool_calls`. */
    invalid?: boolean;
}
export type Step = {
    kind: "batch";
    calls: NodeCall[];
} | {
    kind: "decide";
    callId: string;
    action: ReviewAction;
    data: unknown;
};
type Answer = ToolMessage[] | GatewayError | null;
type Decision = [ReviewAction, unknown];
export type Driver = Generator<Step, ToolMessage[], Answer>;
/**
 * What each step of a batch answered so far, for batches now interrupted for review, keyed by the batch (thread,
 * namespace and the calls themselves). LangGraph runs the node again from the start on resume; the steps already
 * answered are answered from here instead of being sent again, so the calls that ran do not run again, a decision
 * is sent once, and the interrupts line up with the same pending calls. It lives in this process: a resume in
 * another process sends the batch again, which the gateway's call-id record answers without running its calls
 * again (within `[idempotency] window_ms`); reviewed calls are answered by id, never run twice.
 */
export declare class Memo {
    private readonly batches;
    get(key: string): Answer[];
    put(key: string, answered: Answer[]): void;
    drop(key: string): void;
}
/** Runs `driver`, answering each step from the memo when an earlier run of the same batch answered it, else with
 * `perform`. An interrupt keeps what was answered for the resume; any other error forgets the answer that caused it. */
export declare function runSteps(driver: Driver, perform: (step: Step) => Promise<Answer>, memo: Memo, key: string): Promise<ToolMessage[]>;
/** The answers to `calls`, in call order, as steps: the batch; then, for calls pending review (unless `review` is
 * off), a decision for each and the pending calls executed again, which answers their outcome; and again for any
 * still pending after that. `shared`: the calls are one task among others of the same AIMessage (createAgent's
 * tasks, a `Send` per call), and LangGraph hands a resume value that names no interrupt to every such task, so a
 * decision counts only where it names its call (see `resumeDecisions`). */
export declare function drive(calls: NodeCall[], review: boolean, shared?: boolean): Driver;
/** Carries out one step on the client. A refused decision is answered, not thrown: the driver decides what it means. */
export declare function perform(client: Client, step: Step, reviewMode: "wait" | "defer", context: CallContext, timeoutMs: number | undefined): Promise<Answer>;
/** What the interrupt carries: the first undecided call at the top level, all of them in `pending` (the Python
 * node's payload), and the same calls as LangChain v1's human-in-the-loop request (`actionRequests`). */
export declare function interruptPayload(undecided: NodeCall[], answers: Map<string, ToolMessage>, error?: string): Record<string, unknown>;
/**
 * Reads a resume value: a decision (`{action, data}`, or LangChain v1's `{type, ...}`) for the first undecided call,
 * an array of them for the undecided calls in order, LangChain v1's `{decisions: [...]}` likewise, or an object of
 * them keyed by tool call id. A decision with a `tool_call_id` is for that call wherever it stands. When `shared`
 * (see `drive`), only decisions that name their call count: the others are left out, and the call is asked again.
 */
export declare function resumeDecisions(value: unknown, undecided: string[], shared?: boolean): Map<string, Decision>;
/** A plain object (not null, not an array). */
export declare function isObject(value: unknown): value is Record<string, unknown>;
export {};
