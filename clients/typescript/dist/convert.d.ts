/**
 * The edge where protobuf stops: every conversion between the generated messages and `types.ts`, and between
 * spec objects (the snake_case form of spec files) and the proto `ToolSpec`, lives here and nowhere else.
 * @module
 */
import { type MessageInitShape } from "@bufbuild/protobuf";
import { type CallsFromTextRequestSchema, type CallsFromTextResponse, DefinitionFormat as PbFormat, type ExecuteBatchRequestSchema, type ExecuteRequestSchema, type ListToolDefinitionsResponse, ReviewMode as PbReviewMode } from "./gen/toolgate/v1/gateway_pb.js";
import { type ToolSpec as PbToolSpec } from "./gen/toolgate/v1/registry_pb.js";
import { type DecideRequestSchema, type PendingReview as PbPendingReview, type ReviewEvent as PbReviewEvent } from "./gen/toolgate/v1/review_pb.js";
import { type CallContextSchema, type ToolCallSchema, type ToolMessage as PbToolMessage, type ResultBlock as PbResultBlock } from "./gen/toolgate/v1/types_pb.js";
import { type CallContext, type DefinitionFormat, type PendingReview, type RegisteredTool, type ResultBlock, type ReviewAction, type ReviewEvent, type ReviewMode, type TextCalls, type ToolCallInput, type ToolDefinition, type ToolMessage, type ToolSpec } from "./types.js";
export declare function messageFromPb(m: PbToolMessage | undefined): ToolMessage;
/** A result's block; one of a kind newer than this client is left out (its text is in `content`). */
export declare function blockFromPb(b: PbResultBlock): ResultBlock[];
export declare function pendingFromPb(p: PbPendingReview | undefined): PendingReview;
export declare function eventFromPb(e: PbReviewEvent): ReviewEvent;
export declare function definitionsFromPb(response: ListToolDefinitionsResponse): ToolDefinition[];
export declare function textCallsFromPb(r: CallsFromTextResponse): TextCalls;
type Init<S> = S extends import("@bufbuild/protobuf").DescMessage ? MessageInitShape<S> : never;
export declare function contextToPb(context: CallContext | undefined): Init<typeof CallContextSchema>;
/** A string is sent as is (raw model output, possibly broken: the gateway repairs it); anything else as JSON. */
export declare function argumentsText(args: unknown): string;
export declare function callToPb(call: ToolCallInput): Init<typeof ToolCallSchema>;
export declare function reviewModeToPb(mode: ReviewMode | undefined): PbReviewMode;
export declare function executeRequest(call: ToolCallInput, context: CallContext | undefined, mode: ReviewMode | undefined): Init<typeof ExecuteRequestSchema>;
export declare function batchRequest(calls: readonly ToolCallInput[], context: CallContext | undefined, mode: ReviewMode | undefined): Init<typeof ExecuteBatchRequestSchema>;
export declare function textCallsRequest(text: string, options: {
    context?: CallContext;
    tools?: readonly string[];
    run?: boolean;
    reviewMode?: ReviewMode;
    callIdPrefix?: string;
    format?: string;
    model?: string;
}): Init<typeof CallsFromTextRequestSchema>;
export declare function formatToPb(format: DefinitionFormat): PbFormat;
export declare function decideRequest(callId: string, action: ReviewAction, options: {
    arguments?: unknown;
    feedback?: string;
    tenant?: string;
    reviewer?: string;
}): Init<typeof DecideRequestSchema>;
/** A spec in the spec-file form. Unknown fields are refused, as the gateway's own spec reader does. */
export declare function specToPb(spec: ToolSpec): PbToolSpec;
/** The registered spec in the spec-file form, schemas parsed, with the registry's `version`. Enums left at the
 * gateway's default are left out, as in a spec file. */
export declare function specFromPb(spec: PbToolSpec | undefined): RegisteredTool;
export {};
