import type { GenEnum, GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { CallContext, ToolCall, ToolMessage } from "./types_pb.js";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file toolgate/v1/gateway.proto.
 */
export declare const file_toolgate_v1_gateway: GenFile;
/**
 * @generated from message toolgate.v1.ExecuteRequest
 */
export type ExecuteRequest = Message<"toolgate.v1.ExecuteRequest"> & {
    /**
     * @generated from field: toolgate.v1.ToolCall call = 1;
     */
    call?: ToolCall | undefined;
    /**
     * @generated from field: toolgate.v1.CallContext context = 2;
     */
    context?: CallContext | undefined;
    /**
     * @generated from field: toolgate.v1.ReviewMode review_mode = 3;
     */
    reviewMode: ReviewMode;
};
/**
 * Describes the message toolgate.v1.ExecuteRequest.
 * Use `create(ExecuteRequestSchema)` to create a new message.
 */
export declare const ExecuteRequestSchema: GenMessage<ExecuteRequest>;
/**
 * @generated from message toolgate.v1.ExecuteResponse
 */
export type ExecuteResponse = Message<"toolgate.v1.ExecuteResponse"> & {
    /**
     * @generated from field: toolgate.v1.ToolMessage message = 1;
     */
    message?: ToolMessage | undefined;
};
/**
 * Describes the message toolgate.v1.ExecuteResponse.
 * Use `create(ExecuteResponseSchema)` to create a new message.
 */
export declare const ExecuteResponseSchema: GenMessage<ExecuteResponse>;
/**
 * @generated from message toolgate.v1.ExecuteBatchRequest
 */
export type ExecuteBatchRequest = Message<"toolgate.v1.ExecuteBatchRequest"> & {
    /**
     * @generated from field: repeated toolgate.v1.ToolCall calls = 1;
     */
    calls: ToolCall[];
    /**
     * @generated from field: toolgate.v1.CallContext context = 2;
     */
    context?: CallContext | undefined;
    /**
     * @generated from field: toolgate.v1.ReviewMode review_mode = 3;
     */
    reviewMode: ReviewMode;
};
/**
 * Describes the message toolgate.v1.ExecuteBatchRequest.
 * Use `create(ExecuteBatchRequestSchema)` to create a new message.
 */
export declare const ExecuteBatchRequestSchema: GenMessage<ExecuteBatchRequest>;
/**
 * @generated from message toolgate.v1.ExecuteBatchResponse
 */
export type ExecuteBatchResponse = Message<"toolgate.v1.ExecuteBatchResponse"> & {
    /**
     * One per call, in call order.
     *
     * @generated from field: repeated toolgate.v1.ToolMessage messages = 1;
     */
    messages: ToolMessage[];
};
/**
 * Describes the message toolgate.v1.ExecuteBatchResponse.
 * Use `create(ExecuteBatchResponseSchema)` to create a new message.
 */
export declare const ExecuteBatchResponseSchema: GenMessage<ExecuteBatchResponse>;
/**
 * @generated from message toolgate.v1.CallsFromTextRequest
 */
export type CallsFromTextRequest = Message<"toolgate.v1.CallsFromTextRequest"> & {
    /**
     * The assistant's text, exactly as the model wrote it.
     *
     * @generated from field: string text = 1;
     */
    text: string;
    /**
     * @generated from field: toolgate.v1.CallContext context = 2;
     */
    context?: CallContext | undefined;
    /**
     * The registered names of the tools the model was offered; empty: every tool the caller sees.
     *
     * @generated from field: repeated string tools = 3;
     */
    tools: string[];
    /**
     * Run the calls found, as ExecuteBatch does; `messages` then holds their outcomes.
     *
     * @generated from field: bool run = 4;
     */
    run: boolean;
    /**
     * @generated from field: toolgate.v1.ReviewMode review_mode = 5;
     */
    reviewMode: ReviewMode;
    /**
     * With `run`, required: call i runs with the id "<call_id_prefix>-<i>", so the same request sent again runs nothing
     * twice (the call-id record answers it). Use the assistant message's id.
     *
     * @generated from field: string call_id_prefix = 6;
     */
    callIdPrefix: string;
    /**
     * The format the model writes its calls in: "auto" (also when empty), or one of hermes, qwen3_coder_xml,
     * llama3_json, llama3_python_tag, mistral, harmony, pythonic, json. A named format is the only one read: a tagged
     * one reads its own tags only, so a call written any other way is text. An unknown name is INVALID_ARGUMENT.
     *
     * @generated from field: string format = 7;
     */
    format: string;
    /**
     * The chat model that wrote the text, as its provider names it (e.g. "Qwen/Qwen3-8B", "gpt-oss-20b"). Without a
     * named format, the gateway reads the format of the model's family when it knows it, else every envelope.
     *
     * @generated from field: string model = 8;
     */
    model: string;
};
/**
 * Describes the message toolgate.v1.CallsFromTextRequest.
 * Use `create(CallsFromTextRequestSchema)` to create a new message.
 */
export declare const CallsFromTextRequestSchema: GenMessage<CallsFromTextRequest>;
/**
 * @generated from message toolgate.v1.CallsFromTextResponse
 */
export type CallsFromTextResponse = Message<"toolgate.v1.CallsFromTextResponse"> & {
    /**
     * The calls found, in order: the name as the model wrote it, the arguments as read (JSON text), and with `run` the
     * id each ran with. Each still goes through repair and validation when it runs.
     *
     * @generated from field: repeated toolgate.v1.ToolCall calls = 1;
     */
    calls: ToolCall[];
    /**
     * The format the calls were written in: hermes, qwen3_coder_xml, llama3_json, llama3_python_tag, mistral, harmony,
     * pythonic or json; empty when none was found.
     *
     * @generated from field: string envelope = 2;
     */
    envelope: string;
    /**
     * What was around them: code_fence, string_list, print, arguments_dict, text_parts.
     *
     * @generated from field: repeated string wrappers = 3;
     */
    wrappers: string[];
    /**
     * The text with the calls taken out: what the model said besides them.
     *
     * @generated from field: string rest = 4;
     */
    rest: string;
    /**
     * Why a text that showed a call gave none, in words; empty otherwise.
     *
     * @generated from field: string refusal = 5;
     */
    refusal: string;
    /**
     * With `run`: one per call, in order, each with the repair `calls_from_text` first among its repairs.
     *
     * @generated from field: repeated toolgate.v1.ToolMessage messages = 6;
     */
    messages: ToolMessage[];
    /**
     * The refusal's reason, one of a fixed list to log and count: disabled, too_long, too_many_calls, over_budget,
     * not_offered, other_format, quoted, reasoning, example, negated, question, options, past, hypothetical,
     * other_speaker, not_an_action, mention, not_whole, ambiguous. Empty when `refusal` is.
     *
     * @generated from field: string refusal_reason = 7;
     */
    refusalReason: string;
    /**
     * The format the text was read in: the one asked for, the model's, or "auto".
     *
     * @generated from field: string format = 8;
     */
    format: string;
};
/**
 * Describes the message toolgate.v1.CallsFromTextResponse.
 * Use `create(CallsFromTextResponseSchema)` to create a new message.
 */
export declare const CallsFromTextResponseSchema: GenMessage<CallsFromTextResponse>;
/**
 * @generated from message toolgate.v1.ListToolDefinitionsRequest
 */
export type ListToolDefinitionsRequest = Message<"toolgate.v1.ListToolDefinitionsRequest"> & {
    /**
     * @generated from field: toolgate.v1.CallContext context = 1;
     */
    context?: CallContext | undefined;
    /**
     * @generated from field: toolgate.v1.DefinitionFormat format = 2;
     */
    format: DefinitionFormat;
};
/**
 * Describes the message toolgate.v1.ListToolDefinitionsRequest.
 * Use `create(ListToolDefinitionsRequestSchema)` to create a new message.
 */
export declare const ListToolDefinitionsRequestSchema: GenMessage<ListToolDefinitionsRequest>;
/**
 * @generated from message toolgate.v1.ToolDefinition
 */
export type ToolDefinition = Message<"toolgate.v1.ToolDefinition"> & {
    /**
     * The name the model sees; provider-safe for provider formats.
     *
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * The registry name it resolves to.
     *
     * @generated from field: string tool = 2;
     */
    tool: string;
    /**
     * The definition in the requested format, as JSON text.
     *
     * @generated from field: string definition = 3;
     */
    definition: string;
};
/**
 * Describes the message toolgate.v1.ToolDefinition.
 * Use `create(ToolDefinitionSchema)` to create a new message.
 */
export declare const ToolDefinitionSchema: GenMessage<ToolDefinition>;
/**
 * @generated from message toolgate.v1.ListToolDefinitionsResponse
 */
export type ListToolDefinitionsResponse = Message<"toolgate.v1.ListToolDefinitionsResponse"> & {
    /**
     * @generated from field: repeated toolgate.v1.ToolDefinition definitions = 1;
     */
    definitions: ToolDefinition[];
};
/**
 * Describes the message toolgate.v1.ListToolDefinitionsResponse.
 * Use `create(ListToolDefinitionsResponseSchema)` to create a new message.
 */
export declare const ListToolDefinitionsResponseSchema: GenMessage<ListToolDefinitionsResponse>;
/**
 * What Execute does with a call to a tool that needs human review.
 *
 * @generated from enum toolgate.v1.ReviewMode
 */
export declare enum ReviewMode {
    /**
     * Wait for the decision until the call's deadline, then answer PENDING_REVIEW if none came.
     *
     * @generated from enum value: REVIEW_MODE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: REVIEW_MODE_WAIT = 1;
     */
    WAIT = 1,
    /**
     * Answer PENDING_REVIEW at once. Execute the same call id again to get the outcome once decided.
     *
     * @generated from enum value: REVIEW_MODE_DEFER = 2;
     */
    DEFER = 2
}
/**
 * Describes the enum toolgate.v1.ReviewMode.
 */
export declare const ReviewModeSchema: GenEnum<ReviewMode>;
/**
 * @generated from enum toolgate.v1.DefinitionFormat
 */
export declare enum DefinitionFormat {
    /**
     * @generated from enum value: DEFINITION_FORMAT_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: DEFINITION_FORMAT_OPENAI = 1;
     */
    OPENAI = 1,
    /**
     * @generated from enum value: DEFINITION_FORMAT_ANTHROPIC = 2;
     */
    ANTHROPIC = 2,
    /**
     * @generated from enum value: DEFINITION_FORMAT_MCP = 3;
     */
    MCP = 3,
    /**
     * @generated from enum value: DEFINITION_FORMAT_JSON_SCHEMA = 4;
     */
    JSON_SCHEMA = 4
}
/**
 * Describes the enum toolgate.v1.DefinitionFormat.
 */
export declare const DefinitionFormatSchema: GenEnum<DefinitionFormat>;
/**
 * The data plane, called by agents.
 *
 * @generated from service toolgate.v1.ToolGateway
 */
export declare const ToolGateway: GenService<{
    /**
     * Runs one tool call. Tool-level failures are a ToolMessage with status ERROR, never a gRPC error.
     *
     * @generated from rpc toolgate.v1.ToolGateway.Execute
     */
    execute: {
        methodKind: "unary";
        input: typeof ExecuteRequestSchema;
        output: typeof ExecuteResponseSchema;
    };
    /**
     * Runs the calls of one AI message concurrently and answers in call order.
     *
     * @generated from rpc toolgate.v1.ToolGateway.ExecuteBatch
     */
    executeBatch: {
        methodKind: "unary";
        input: typeof ExecuteBatchRequestSchema;
        output: typeof ExecuteBatchResponseSchema;
    };
    /**
     * Finds the tool calls a model wrote in its text instead of making them (Hermes <tool_call>, pythonic lists, Llama,
     * Mistral, gpt-oss harmony, Qwen3-Coder XML, ...), and with `run` runs them as ExecuteBatch does. A call only
     * mentioned, shown as an example, conditional, or to a tool not offered is never found; `refusal` says why none was.
     *
     * @generated from rpc toolgate.v1.ToolGateway.CallsFromText
     */
    callsFromText: {
        methodKind: "unary";
        input: typeof CallsFromTextRequestSchema;
        output: typeof CallsFromTextResponseSchema;
    };
    /**
     * The definitions a model should be bound to, tenant-scoped.
     *
     * @generated from rpc toolgate.v1.ToolGateway.ListToolDefinitions
     */
    listToolDefinitions: {
        methodKind: "unary";
        input: typeof ListToolDefinitionsRequestSchema;
        output: typeof ListToolDefinitionsResponseSchema;
    };
}>;
