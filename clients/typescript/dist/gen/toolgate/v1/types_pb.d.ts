import type { GenEnum, GenFile, GenMessage } from "@bufbuild/protobuf/codegenv2";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file toolgate/v1/types.proto.
 */
export declare const file_toolgate_v1_types: GenFile;
/**
 * One tool call as the model wrote it. `arguments` is raw JSON text, possibly broken.
 *
 * @generated from message toolgate.v1.ToolCall
 */
export type ToolCall = Message<"toolgate.v1.ToolCall"> & {
    /**
     * @generated from field: string id = 1;
     */
    id: string;
    /**
     * @generated from field: string name = 2;
     */
    name: string;
    /**
     * @generated from field: string arguments = 3;
     */
    arguments: string;
};
/**
 * Describes the message toolgate.v1.ToolCall.
 * Use `create(ToolCallSchema)` to create a new message.
 */
export declare const ToolCallSchema: GenMessage<ToolCall>;
/**
 * Who is calling. Tenancy, injection and policy read this; the model never writes it.
 *
 * @generated from message toolgate.v1.CallContext
 */
export type CallContext = Message<"toolgate.v1.CallContext"> & {
    /**
     * @generated from field: string tenant = 1;
     */
    tenant: string;
    /**
     * @generated from field: string user_id = 2;
     */
    userId: string;
    /**
     * @generated from field: string session_id = 3;
     */
    sessionId: string;
    /**
     * @generated from field: map<string, string> values = 4;
     */
    values: {
        [key: string]: string;
    };
};
/**
 * Describes the message toolgate.v1.CallContext.
 * Use `create(CallContextSchema)` to create a new message.
 */
export declare const CallContextSchema: GenMessage<CallContext>;
/**
 * One schema violation. Paths are JSON pointers.
 *
 * @generated from message toolgate.v1.Violation
 */
export type Violation = Message<"toolgate.v1.Violation"> & {
    /**
     * @generated from field: string instance_path = 1;
     */
    instancePath: string;
    /**
     * @generated from field: string schema_path = 2;
     */
    schemaPath: string;
    /**
     * @generated from field: string message = 3;
     */
    message: string;
};
/**
 * Describes the message toolgate.v1.Violation.
 * Use `create(ViolationSchema)` to create a new message.
 */
export declare const ViolationSchema: GenMessage<Violation>;
/**
 * @generated from message toolgate.v1.ToolError
 */
export type ToolError = Message<"toolgate.v1.ToolError"> & {
    /**
     * @generated from field: toolgate.v1.ErrorKind kind = 1;
     */
    kind: ErrorKind;
    /**
     * @generated from field: string message = 2;
     */
    message: string;
    /**
     * The model should change its call.
     *
     * @generated from field: bool model_fixable = 3;
     */
    modelFixable: boolean;
    /**
     * The same call may succeed later.
     *
     * @generated from field: bool retryable = 4;
     */
    retryable: boolean;
    /**
     * @generated from field: uint64 retry_after_ms = 5;
     */
    retryAfterMs: bigint;
    /**
     * @generated from field: repeated toolgate.v1.Violation violations = 6;
     */
    violations: Violation[];
    /**
     * @generated from field: repeated string suggestions = 7;
     */
    suggestions: string[];
    /**
     * The arguments exactly as received, so error handlers see the input that caused the error.
     *
     * @generated from field: string original_arguments = 8;
     */
    originalArguments: string;
};
/**
 * Describes the message toolgate.v1.ToolError.
 * Use `create(ToolErrorSchema)` to create a new message.
 */
export declare const ToolErrorSchema: GenMessage<ToolError>;
/**
 * One change the gateway made to a call. `before` and `after` are JSON text.
 *
 * @generated from message toolgate.v1.Repair
 */
export type Repair = Message<"toolgate.v1.Repair"> & {
    /**
     * @generated from field: string rule = 1;
     */
    rule: string;
    /**
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * @generated from field: string before = 3;
     */
    before: string;
    /**
     * @generated from field: string after = 4;
     */
    after: string;
};
/**
 * Describes the message toolgate.v1.Repair.
 * Use `create(RepairSchema)` to create a new message.
 */
export declare const RepairSchema: GenMessage<Repair>;
/**
 * The one answer to a tool call, success or error, ready to hand back to the model.
 *
 * @generated from message toolgate.v1.ToolMessage
 */
export type ToolMessage = Message<"toolgate.v1.ToolMessage"> & {
    /**
     * @generated from field: string tool_call_id = 1;
     */
    toolCallId: string;
    /**
     * The resolved tool name (or the name as called when it did not resolve).
     *
     * @generated from field: string name = 2;
     */
    name: string;
    /**
     * @generated from field: toolgate.v1.ToolStatus status = 3;
     */
    status: ToolStatus;
    /**
     * The text for the model; for an error, the model-facing explanation.
     *
     * @generated from field: string content = 4;
     */
    content: string;
    /**
     * JSON text of a structured result, if any.
     *
     * @generated from field: string structured = 5;
     */
    structured: string;
    /**
     * @generated from field: toolgate.v1.ToolError error = 6;
     */
    error?: ToolError | undefined;
    /**
     * @generated from field: repeated toolgate.v1.Repair repairs = 7;
     */
    repairs: Repair[];
    /**
     * JSON text of the model-controlled arguments the tool received.
     *
     * @generated from field: string effective_arguments = 8;
     */
    effectiveArguments: string;
    /**
     * @generated from field: uint32 attempts = 9;
     */
    attempts: number;
    /**
     * @generated from field: uint64 duration_us = 10;
     */
    durationUs: bigint;
    /**
     * A packed parallel call split into the calls the model meant (the repair `parallel_split`): one part per
     * call, in order. `content` gives every part's result; `status` is ERROR if any part failed. Empty otherwise.
     *
     * @generated from field: repeated toolgate.v1.ToolMessagePart parts = 11;
     */
    parts: ToolMessagePart[];
    /**
     * The result's content blocks, in order, when it holds more than text (an image, audio, a resource): MCP's
     * content blocks, as LangChain's content blocks model them too. `content` is then the text a model that reads
     * only text gets (text blocks as they are, a short note for the rest). Empty for a result of text alone.
     *
     * @generated from field: repeated toolgate.v1.ResultBlock blocks = 12;
     */
    blocks: ResultBlock[];
};
/**
 * Describes the message toolgate.v1.ToolMessage.
 * Use `create(ToolMessageSchema)` to create a new message.
 */
export declare const ToolMessageSchema: GenMessage<ToolMessage>;
/**
 * One block of a tool's result. Binary data is base64, as MCP carries it.
 *
 * @generated from message toolgate.v1.ResultBlock
 */
export type ResultBlock = Message<"toolgate.v1.ResultBlock"> & {
    /**
     * @generated from oneof toolgate.v1.ResultBlock.block
     */
    block: {
        /**
         * @generated from field: toolgate.v1.TextBlock text = 1;
         */
        value: TextBlock;
        case: "text";
    } | {
        /**
         * @generated from field: toolgate.v1.MediaBlock image = 2;
         */
        value: MediaBlock;
        case: "image";
    } | {
        /**
         * @generated from field: toolgate.v1.MediaBlock audio = 3;
         */
        value: MediaBlock;
        case: "audio";
    } | {
        /**
         * @generated from field: toolgate.v1.ResourceLinkBlock resource_link = 4;
         */
        value: ResourceLinkBlock;
        case: "resourceLink";
    } | {
        /**
         * @generated from field: toolgate.v1.ResourceBlock resource = 5;
         */
        value: ResourceBlock;
        case: "resource";
    } | {
        case: undefined;
        value?: undefined;
    };
};
/**
 * Describes the message toolgate.v1.ResultBlock.
 * Use `create(ResultBlockSchema)` to create a new message.
 */
export declare const ResultBlockSchema: GenMessage<ResultBlock>;
/**
 * @generated from message toolgate.v1.TextBlock
 */
export type TextBlock = Message<"toolgate.v1.TextBlock"> & {
    /**
     * @generated from field: string text = 1;
     */
    text: string;
};
/**
 * Describes the message toolgate.v1.TextBlock.
 * Use `create(TextBlockSchema)` to create a new message.
 */
export declare const TextBlockSchema: GenMessage<TextBlock>;
/**
 * An image or audio clip: base64 data and its MIME type.
 *
 * @generated from message toolgate.v1.MediaBlock
 */
export type MediaBlock = Message<"toolgate.v1.MediaBlock"> & {
    /**
     * @generated from field: string data = 1;
     */
    data: string;
    /**
     * @generated from field: string mime_type = 2;
     */
    mimeType: string;
};
/**
 * Describes the message toolgate.v1.MediaBlock.
 * Use `create(MediaBlockSchema)` to create a new message.
 */
export declare const MediaBlockSchema: GenMessage<MediaBlock>;
/**
 * A resource the result points at, not its contents.
 *
 * @generated from message toolgate.v1.ResourceLinkBlock
 */
export type ResourceLinkBlock = Message<"toolgate.v1.ResourceLinkBlock"> & {
    /**
     * @generated from field: string uri = 1;
     */
    uri: string;
    /**
     * @generated from field: string name = 2;
     */
    name: string;
    /**
     * @generated from field: optional string mime_type = 3;
     */
    mimeType?: string | undefined;
    /**
     * @generated from field: optional string description = 4;
     */
    description?: string | undefined;
};
/**
 * Describes the message toolgate.v1.ResourceLinkBlock.
 * Use `create(ResourceLinkBlockSchema)` to create a new message.
 */
export declare const ResourceLinkBlockSchema: GenMessage<ResourceLinkBlock>;
/**
 * A resource's contents: text, or a base64 blob.
 *
 * @generated from message toolgate.v1.ResourceBlock
 */
export type ResourceBlock = Message<"toolgate.v1.ResourceBlock"> & {
    /**
     * @generated from field: string uri = 1;
     */
    uri: string;
    /**
     * @generated from field: optional string mime_type = 2;
     */
    mimeType?: string | undefined;
    /**
     * @generated from oneof toolgate.v1.ResourceBlock.contents
     */
    contents: {
        /**
         * @generated from field: string text = 3;
         */
        value: string;
        case: "text";
    } | {
        /**
         * @generated from field: string blob = 4;
         */
        value: string;
        case: "blob";
    } | {
        case: undefined;
        value?: undefined;
    };
};
/**
 * Describes the message toolgate.v1.ResourceBlock.
 * Use `create(ResourceBlockSchema)` to create a new message.
 */
export declare const ResourceBlockSchema: GenMessage<ResourceBlock>;
/**
 * One of the calls a packed parallel call was split into.
 *
 * @generated from message toolgate.v1.ToolMessagePart
 */
export type ToolMessagePart = Message<"toolgate.v1.ToolMessagePart"> & {
    /**
     * @generated from field: toolgate.v1.ToolStatus status = 1;
     */
    status: ToolStatus;
    /**
     * The part's own result or, for an error, its model-facing explanation.
     *
     * @generated from field: string content = 2;
     */
    content: string;
    /**
     * JSON text of a structured result, if any.
     *
     * @generated from field: string structured = 3;
     */
    structured: string;
    /**
     * @generated from field: toolgate.v1.ToolError error = 4;
     */
    error?: ToolError | undefined;
    /**
     * JSON text of the model-controlled arguments this part ran with.
     *
     * @generated from field: string effective_arguments = 5;
     */
    effectiveArguments: string;
    /**
     * Repairs of this part's own arguments, after the split.
     *
     * @generated from field: repeated toolgate.v1.Repair repairs = 6;
     */
    repairs: Repair[];
    /**
     * @generated from field: uint32 attempts = 7;
     */
    attempts: number;
};
/**
 * Describes the message toolgate.v1.ToolMessagePart.
 * Use `create(ToolMessagePartSchema)` to create a new message.
 */
export declare const ToolMessagePartSchema: GenMessage<ToolMessagePart>;
/**
 * @generated from enum toolgate.v1.ToolStatus
 */
export declare enum ToolStatus {
    /**
     * @generated from enum value: TOOL_STATUS_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: TOOL_STATUS_SUCCESS = 1;
     */
    SUCCESS = 1,
    /**
     * @generated from enum value: TOOL_STATUS_ERROR = 2;
     */
    ERROR = 2,
    /**
     * @generated from enum value: TOOL_STATUS_PENDING_REVIEW = 3;
     */
    PENDING_REVIEW = 3
}
/**
 * Describes the enum toolgate.v1.ToolStatus.
 */
export declare const ToolStatusSchema: GenEnum<ToolStatus>;
/**
 * @generated from enum toolgate.v1.ErrorKind
 */
export declare enum ErrorKind {
    /**
     * @generated from enum value: ERROR_KIND_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: ERROR_KIND_TOOL_NOT_FOUND = 1;
     */
    TOOL_NOT_FOUND = 1,
    /**
     * @generated from enum value: ERROR_KIND_MALFORMED_ARGUMENTS = 2;
     */
    MALFORMED_ARGUMENTS = 2,
    /**
     * @generated from enum value: ERROR_KIND_INVALID_ARGUMENTS = 3;
     */
    INVALID_ARGUMENTS = 3,
    /**
     * @generated from enum value: ERROR_KIND_TOOL_ERROR = 4;
     */
    TOOL_ERROR = 4,
    /**
     * @generated from enum value: ERROR_KIND_TIMEOUT = 5;
     */
    TIMEOUT = 5,
    /**
     * @generated from enum value: ERROR_KIND_RATE_LIMITED = 6;
     */
    RATE_LIMITED = 6,
    /**
     * @generated from enum value: ERROR_KIND_UNAVAILABLE = 7;
     */
    UNAVAILABLE = 7,
    /**
     * @generated from enum value: ERROR_KIND_REJECTED = 8;
     */
    REJECTED = 8,
    /**
     * @generated from enum value: ERROR_KIND_PERMISSION_DENIED = 9;
     */
    PERMISSION_DENIED = 9,
    /**
     * @generated from enum value: ERROR_KIND_BUDGET_EXCEEDED = 10;
     */
    BUDGET_EXCEEDED = 10,
    /**
     * @generated from enum value: ERROR_KIND_INTERNAL = 11;
     */
    INTERNAL = 11,
    /**
     * A policy rule denied the call; the message is the rule's. Model-fixable only if the rule says so.
     *
     * @generated from enum value: ERROR_KIND_POLICY_DENIED = 12;
     */
    POLICY_DENIED = 12
}
/**
 * Describes the enum toolgate.v1.ErrorKind.
 */
export declare const ErrorKindSchema: GenEnum<ErrorKind>;
