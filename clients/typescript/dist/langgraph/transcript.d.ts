/**
 * The transcript side: a typed toolgate `ToolMessage` as a LangChain ToolMessage, and the AIMessage rewritten with
 * the calls as they ran (arguments repaired, injected parameters removed, edited by a reviewer).
 * @module
 */
import { AIMessage, type InvalidToolCall, type ToolCall, ToolMessage as LCToolMessage } from "@langchain/core/messages";
import type { ToolMessage } from "../types.js";
import { type NodeCall } from "./review.js";
/**
 * A typed toolgate `ToolMessage` as a LangChain ToolMessage: `status: "error"` unless it succeeded, the typed
 * error in `additional_kwargs.error`, the repairs in `additional_kwargs.repairs`, the structured result as
 * `artifact`, a result of more than text as LangChain content blocks, and the attempts, duration and effective
 * arguments in `response_metadata.toolgate`.
 */
export declare function toLangChain(m: ToolMessage, call?: {
    id?: string;
    name?: string;
}): LCToolMessage;
/** The id of a split call's `index`-th part, as the gateway names it: the call's own id for the first, `<id>_2`,
 * `<id>_3`, ... for the others. */
export declare function partId(id: string, index: number): string;
/**
 * A split call's parts as the calls the model should have made, each with its own answer. Each answer carries the
 * whole call's repairs (the `parallel_split` record among them) and then the part's own.
 */
export declare function splitAnswers(call: NodeCall, m: ToolMessage): [NodeCall, ToolMessage][];
/**
 * The AIMessage with each tool call's arguments (and a repaired tool name) as they ran, and each split call as the
 * calls it was split into (with `splitsOnly`, only those), or undefined when nothing changes. Same id, so
 * LangGraph's messages reducer replaces the original in the state.
 */
export declare function rewriteAiMessage(ai: AIMessage, calls: NodeCall[], messages: ToolMessage[], splitsOnly?: boolean): AIMessage | undefined;
/** A copy of `ai` (same id) carrying these calls. */
export declare function withCalls(ai: AIMessage, toolCalls: ToolCall[], invalid: InvalidToolCall[], additional?: AIMessage["additional_kwargs"]): AIMessage;
