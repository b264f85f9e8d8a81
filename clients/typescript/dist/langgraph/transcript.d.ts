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
 * `artifact`, and the attempts, duration and effective arguments in `response_metadata.toolgate`.
 */
export declare function toLangChain(m: ToolMessage, call?: {
    id?: string;
    name?: string;
}): LCToolMessage;
/**
 * The AIMessage with each tool call's arguments (and a repaired tool name) as they ran, or undefined when all ran
 * as written. Same id, so LangGraph's messages reducer replaces the original in the state.
 */
export declare function rewriteAiMessage(ai: AIMessage, calls: NodeCall[], messages: ToolMessage[]): AIMessage | undefined;
/** A copy of `ai` (same id) carrying these calls. */
export declare function withCalls(ai: AIMessage, toolCalls: ToolCall[], invalid: InvalidToolCall[], additional?: AIMessage["additional_kwargs"]): AIMessage;
