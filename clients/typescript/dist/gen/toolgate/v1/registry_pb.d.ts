import type { GenEnum, GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file toolgate/v1/registry.proto.
 */
export declare const file_toolgate_v1_registry: GenFile;
/**
 * @generated from message toolgate.v1.ToolSpec
 */
export type ToolSpec = Message<"toolgate.v1.ToolSpec"> & {
    /**
     * ^[A-Za-z0-9_.-]{1,128}$
     *
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * @generated from field: string description = 2;
     */
    description: string;
    /**
     * JSON Schema of the arguments, as JSON text. Must be an object schema.
     *
     * @generated from field: string input_schema = 3;
     */
    inputSchema: string;
    /**
     * Optional JSON Schema of the result, as JSON text.
     *
     * @generated from field: string output_schema = 4;
     */
    outputSchema: string;
    /**
     * @generated from field: toolgate.v1.Backend backend = 5;
     */
    backend?: Backend | undefined;
    /**
     * @generated from field: repeated toolgate.v1.Injection inject = 6;
     */
    inject: Injection[];
    /**
     * @generated from field: toolgate.v1.RepairPolicy repair = 7;
     */
    repair?: RepairPolicy | undefined;
    /**
     * @generated from field: toolgate.v1.Limits limits = 8;
     */
    limits?: Limits | undefined;
    /**
     * @generated from field: toolgate.v1.Review review = 9;
     */
    review?: Review | undefined;
    /**
     * Empty means shared by all tenants.
     *
     * @generated from field: string tenant = 10;
     */
    tenant: string;
    /**
     * @generated from field: map<string, string> labels = 11;
     */
    labels: {
        [key: string]: string;
    };
    /**
     * Output only: bumped on every replace, starting at 1.
     *
     * @generated from field: uint64 version = 12;
     */
    version: bigint;
    /**
     * @generated from field: toolgate.v1.Budget budget = 13;
     */
    budget?: Budget | undefined;
    /**
     * Rules on what a call says, run in order after repair, validation and injection (after the config's [[policy]]
     * rules that match the tool). Never shown to models.
     *
     * @generated from field: repeated toolgate.v1.PolicyRule policy = 14;
     */
    policy: PolicyRule[];
};
/**
 * Describes the message toolgate.v1.ToolSpec.
 * Use `create(ToolSpecSchema)` to create a new message.
 */
export declare const ToolSpecSchema: GenMessage<ToolSpec>;
/**
 * A rule: when its CEL condition holds for a call, the call is denied (POLICY_DENIED) or sent to review. The
 * condition reads `args` (the arguments that would run, injected values included), `context` (user_id, tenant,
 * session_id, values), `tool` (name, labels) and `now` (a timestamp).
 *
 * @generated from message toolgate.v1.PolicyRule
 */
export type PolicyRule = Message<"toolgate.v1.PolicyRule"> & {
    /**
     * [A-Za-z0-9_.:-]{1,64}, unique within the tool: names the rule in answers, reviews, spans and metrics.
     *
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * The CEL condition; checked when the tool is registered (syntax, names, at most 4096 bytes).
     *
     * @generated from field: string when = 2;
     */
    when: string;
    /**
     * @generated from field: toolgate.v1.PolicyAction action = 3;
     */
    action: PolicyAction;
    /**
     * For DENY: what the model is told. For REVIEW: what the reviewer reads.
     *
     * @generated from field: string message = 4;
     */
    message: string;
    /**
     * When the condition cannot be evaluated on a call (a missing field, a type mismatch, over its cost budget).
     * Unspecified is DENY.
     *
     * @generated from field: toolgate.v1.PolicyAction on_error = 5;
     */
    onError: PolicyAction;
    /**
     * A denied call is the model's to fix: its error says it may call again with other arguments.
     *
     * @generated from field: bool model_fixable = 6;
     */
    modelFixable: boolean;
};
/**
 * Describes the message toolgate.v1.PolicyRule.
 * Use `create(PolicyRuleSchema)` to create a new message.
 */
export declare const PolicyRuleSchema: GenMessage<PolicyRule>;
/**
 * @generated from message toolgate.v1.Backend
 */
export type Backend = Message<"toolgate.v1.Backend"> & {
    /**
     * @generated from oneof toolgate.v1.Backend.kind
     */
    kind: {
        /**
         * @generated from field: toolgate.v1.GrpcBackend grpc = 1;
         */
        value: GrpcBackend;
        case: "grpc";
    } | {
        /**
         * @generated from field: toolgate.v1.HttpBackend http = 2;
         */
        value: HttpBackend;
        case: "http";
    } | {
        /**
         * @generated from field: toolgate.v1.McpBackend mcp = 3;
         */
        value: McpBackend;
        case: "mcp";
    } | {
        /**
         * @generated from field: toolgate.v1.WorkerBackend worker = 4;
         */
        value: WorkerBackend;
        case: "worker";
    } | {
        case: undefined;
        value?: undefined;
    };
};
/**
 * Describes the message toolgate.v1.Backend.
 * Use `create(BackendSchema)` to create a new message.
 */
export declare const BackendSchema: GenMessage<Backend>;
/**
 * A server implementing toolgate.v1.ToolRuntime.
 *
 * @generated from message toolgate.v1.GrpcBackend
 */
export type GrpcBackend = Message<"toolgate.v1.GrpcBackend"> & {
    /**
     * For example http://127.0.0.1:50051
     *
     * @generated from field: string target = 1;
     */
    target: string;
};
/**
 * Describes the message toolgate.v1.GrpcBackend.
 * Use `create(GrpcBackendSchema)` to create a new message.
 */
export declare const GrpcBackendSchema: GenMessage<GrpcBackend>;
/**
 * The arguments are sent as the JSON body. 2xx is success.
 *
 * @generated from message toolgate.v1.HttpBackend
 */
export type HttpBackend = Message<"toolgate.v1.HttpBackend"> & {
    /**
     * @generated from field: string url = 1;
     */
    url: string;
    /**
     * Defaults to POST.
     *
     * @generated from field: string method = 2;
     */
    method: string;
    /**
     * @generated from field: map<string, string> headers = 3;
     */
    headers: {
        [key: string]: string;
    };
};
/**
 * Describes the message toolgate.v1.HttpBackend.
 * Use `create(HttpBackendSchema)` to create a new message.
 */
export declare const HttpBackendSchema: GenMessage<HttpBackend>;
/**
 * @generated from message toolgate.v1.McpBackend
 */
export type McpBackend = Message<"toolgate.v1.McpBackend"> & {
    /**
     * @generated from field: string server = 1;
     */
    server: string;
    /**
     * @generated from field: string tool = 2;
     */
    tool: string;
};
/**
 * Describes the message toolgate.v1.McpBackend.
 * Use `create(McpBackendSchema)` to create a new message.
 */
export declare const McpBackendSchema: GenMessage<McpBackend>;
/**
 * @generated from message toolgate.v1.WorkerBackend
 */
export type WorkerBackend = Message<"toolgate.v1.WorkerBackend"> & {};
/**
 * Describes the message toolgate.v1.WorkerBackend.
 * Use `create(WorkerBackendSchema)` to create a new message.
 */
export declare const WorkerBackendSchema: GenMessage<WorkerBackend>;
/**
 * @generated from message toolgate.v1.Injection
 */
export type Injection = Message<"toolgate.v1.Injection"> & {
    /**
     * @generated from field: string param = 1;
     */
    param: string;
    /**
     * user_id | tenant | session_id | values.<key> | literal:<json>
     *
     * @generated from field: string from = 2;
     */
    from: string;
};
/**
 * Describes the message toolgate.v1.Injection.
 * Use `create(InjectionSchema)` to create a new message.
 */
export declare const InjectionSchema: GenMessage<Injection>;
/**
 * @generated from message toolgate.v1.RepairPolicy
 */
export type RepairPolicy = Message<"toolgate.v1.RepairPolicy"> & {
    /**
     * @generated from field: optional bool enabled = 1;
     */
    enabled?: boolean | undefined;
    /**
     * @generated from field: map<string, string> aliases = 2;
     */
    aliases: {
        [key: string]: string;
    };
    /**
     * @generated from field: bool drop_unknown = 3;
     */
    dropUnknown: boolean;
    /**
     * Whether a packed parallel call (one array per parameter that takes one value) may be split into the calls
     * the model meant. Unset: yes when the tool is idempotent (or an imported MCP tool is read-only), never under
     * review.
     *
     * @generated from field: optional bool split_parallel = 4;
     */
    splitParallel?: boolean | undefined;
};
/**
 * Describes the message toolgate.v1.RepairPolicy.
 * Use `create(RepairPolicySchema)` to create a new message.
 */
export declare const RepairPolicySchema: GenMessage<RepairPolicy>;
/**
 * @generated from message toolgate.v1.Limits
 */
export type Limits = Message<"toolgate.v1.Limits"> & {
    /**
     * For example "10/s" or "600/m". Empty means unlimited.
     *
     * @generated from field: string rate = 1;
     */
    rate: string;
    /**
     * @generated from field: uint32 burst = 2;
     */
    burst: number;
    /**
     * @generated from field: toolgate.v1.LimitKey key = 3;
     */
    key: LimitKey;
    /**
     * @generated from field: uint32 max_concurrency = 4;
     */
    maxConcurrency: number;
    /**
     * 0 means the gateway default.
     *
     * @generated from field: uint64 timeout_ms = 5;
     */
    timeoutMs: bigint;
    /**
     * @generated from field: uint32 retries = 6;
     */
    retries: number;
    /**
     * @generated from field: bool idempotent = 7;
     */
    idempotent: boolean;
    /**
     * @generated from field: toolgate.v1.RateScope scope = 8;
     */
    scope: RateScope;
    /**
     * @generated from field: toolgate.v1.RedisDown when_redis_down = 9;
     */
    whenRedisDown: RedisDown;
};
/**
 * Describes the message toolgate.v1.Limits.
 * Use `create(LimitsSchema)` to create a new message.
 */
export declare const LimitsSchema: GenMessage<Limits>;
/**
 * @generated from message toolgate.v1.Review
 */
export type Review = Message<"toolgate.v1.Review"> & {
    /**
     * The tool runs only once a person approves (or edits) the call through toolgate.v1.ToolReview.
     *
     * @generated from field: bool required = 1;
     */
    required: boolean;
    /**
     * With required: a caller whose MCP host can ask its user (elicitation) may have the user confirm the call
     * instead of waiting for a reviewer. Calls through other doors still wait for a reviewer.
     *
     * @generated from field: bool caller_may_confirm = 2;
     */
    callerMayConfirm: boolean;
};
/**
 * Describes the message toolgate.v1.Review.
 * Use `create(ReviewSchema)` to create a new message.
 */
export declare const ReviewSchema: GenMessage<Review>;
/**
 * Per-session budgets for this tool; 0 means the gateway's default.
 *
 * @generated from message toolgate.v1.Budget
 */
export type Budget = Message<"toolgate.v1.Budget"> & {
    /**
     * Calls of this tool in one session.
     *
     * @generated from field: uint32 max_calls = 1;
     */
    maxCalls: number;
    /**
     * Failed calls of this tool in a row in one session.
     *
     * @generated from field: uint32 max_consecutive_failures = 2;
     */
    maxConsecutiveFailures: number;
};
/**
 * Describes the message toolgate.v1.Budget.
 * Use `create(BudgetSchema)` to create a new message.
 */
export declare const BudgetSchema: GenMessage<Budget>;
/**
 * @generated from message toolgate.v1.RegisterToolRequest
 */
export type RegisterToolRequest = Message<"toolgate.v1.RegisterToolRequest"> & {
    /**
     * @generated from field: toolgate.v1.ToolSpec spec = 1;
     */
    spec?: ToolSpec | undefined;
};
/**
 * Describes the message toolgate.v1.RegisterToolRequest.
 * Use `create(RegisterToolRequestSchema)` to create a new message.
 */
export declare const RegisterToolRequestSchema: GenMessage<RegisterToolRequest>;
/**
 * @generated from message toolgate.v1.RegisterToolResponse
 */
export type RegisterToolResponse = Message<"toolgate.v1.RegisterToolResponse"> & {
    /**
     * @generated from field: toolgate.v1.ToolSpec tool = 1;
     */
    tool?: ToolSpec | undefined;
    /**
     * True when no tool of that name and tenant existed before.
     *
     * @generated from field: bool created = 2;
     */
    created: boolean;
};
/**
 * Describes the message toolgate.v1.RegisterToolResponse.
 * Use `create(RegisterToolResponseSchema)` to create a new message.
 */
export declare const RegisterToolResponseSchema: GenMessage<RegisterToolResponse>;
/**
 * @generated from message toolgate.v1.GetToolRequest
 */
export type GetToolRequest = Message<"toolgate.v1.GetToolRequest"> & {
    /**
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * @generated from field: string tenant = 2;
     */
    tenant: string;
};
/**
 * Describes the message toolgate.v1.GetToolRequest.
 * Use `create(GetToolRequestSchema)` to create a new message.
 */
export declare const GetToolRequestSchema: GenMessage<GetToolRequest>;
/**
 * @generated from message toolgate.v1.GetToolResponse
 */
export type GetToolResponse = Message<"toolgate.v1.GetToolResponse"> & {
    /**
     * @generated from field: toolgate.v1.ToolSpec tool = 1;
     */
    tool?: ToolSpec | undefined;
};
/**
 * Describes the message toolgate.v1.GetToolResponse.
 * Use `create(GetToolResponseSchema)` to create a new message.
 */
export declare const GetToolResponseSchema: GenMessage<GetToolResponse>;
/**
 * @generated from message toolgate.v1.ListToolsRequest
 */
export type ListToolsRequest = Message<"toolgate.v1.ListToolsRequest"> & {
    /**
     * Only the tools of this tenant; all tools when empty and all_tenants is set.
     *
     * @generated from field: string tenant = 1;
     */
    tenant: string;
    /**
     * @generated from field: bool all_tenants = 2;
     */
    allTenants: boolean;
};
/**
 * Describes the message toolgate.v1.ListToolsRequest.
 * Use `create(ListToolsRequestSchema)` to create a new message.
 */
export declare const ListToolsRequestSchema: GenMessage<ListToolsRequest>;
/**
 * @generated from message toolgate.v1.ListToolsResponse
 */
export type ListToolsResponse = Message<"toolgate.v1.ListToolsResponse"> & {
    /**
     * @generated from field: repeated toolgate.v1.ToolSpec tools = 1;
     */
    tools: ToolSpec[];
};
/**
 * Describes the message toolgate.v1.ListToolsResponse.
 * Use `create(ListToolsResponseSchema)` to create a new message.
 */
export declare const ListToolsResponseSchema: GenMessage<ListToolsResponse>;
/**
 * @generated from message toolgate.v1.DeleteToolRequest
 */
export type DeleteToolRequest = Message<"toolgate.v1.DeleteToolRequest"> & {
    /**
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * @generated from field: string tenant = 2;
     */
    tenant: string;
};
/**
 * Describes the message toolgate.v1.DeleteToolRequest.
 * Use `create(DeleteToolRequestSchema)` to create a new message.
 */
export declare const DeleteToolRequestSchema: GenMessage<DeleteToolRequest>;
/**
 * @generated from message toolgate.v1.DeleteToolResponse
 */
export type DeleteToolResponse = Message<"toolgate.v1.DeleteToolResponse"> & {};
/**
 * Describes the message toolgate.v1.DeleteToolResponse.
 * Use `create(DeleteToolResponseSchema)` to create a new message.
 */
export declare const DeleteToolResponseSchema: GenMessage<DeleteToolResponse>;
/**
 * @generated from enum toolgate.v1.PolicyAction
 */
export declare enum PolicyAction {
    /**
     * @generated from enum value: POLICY_ACTION_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: POLICY_ACTION_DENY = 1;
     */
    DENY = 1,
    /**
     * @generated from enum value: POLICY_ACTION_REVIEW = 2;
     */
    REVIEW = 2,
    /**
     * Only for on_error: the rule is skipped.
     *
     * @generated from enum value: POLICY_ACTION_ALLOW = 3;
     */
    ALLOW = 3
}
/**
 * Describes the enum toolgate.v1.PolicyAction.
 */
export declare const PolicyActionSchema: GenEnum<PolicyAction>;
/**
 * @generated from enum toolgate.v1.LimitKey
 */
export declare enum LimitKey {
    /**
     * @generated from enum value: LIMIT_KEY_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: LIMIT_KEY_TOOL = 1;
     */
    TOOL = 1,
    /**
     * @generated from enum value: LIMIT_KEY_TENANT = 2;
     */
    TENANT = 2,
    /**
     * @generated from enum value: LIMIT_KEY_USER = 3;
     */
    USER = 3,
    /**
     * @generated from enum value: LIMIT_KEY_SESSION = 4;
     */
    SESSION = 4
}
/**
 * Describes the enum toolgate.v1.LimitKey.
 */
export declare const LimitKeySchema: GenEnum<LimitKey>;
/**
 * Where a rate limit is counted.
 *
 * @generated from enum toolgate.v1.RateScope
 */
export declare enum RateScope {
    /**
     * Every gateway together when the gateway runs in cluster mode (a Redis URL configured), else this gateway.
     *
     * @generated from enum value: RATE_SCOPE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: RATE_SCOPE_CLUSTER = 1;
     */
    CLUSTER = 1,
    /**
     * Each gateway on its own, with no Redis round trip.
     *
     * @generated from enum value: RATE_SCOPE_GATEWAY = 2;
     */
    GATEWAY = 2
}
/**
 * Describes the enum toolgate.v1.RateScope.
 */
export declare const RateScopeSchema: GenEnum<RateScope>;
/**
 * What a cluster-wide rate limit does while Redis is unreachable.
 *
 * @generated from enum toolgate.v1.RedisDown
 */
export declare enum RedisDown {
    /**
     * Fail open: the call is admitted, and counted in toolgate.cluster.fail_open.
     *
     * @generated from enum value: REDIS_DOWN_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: REDIS_DOWN_FAIL_OPEN = 1;
     */
    FAIL_OPEN = 1,
    /**
     * Fail closed: the call answers RATE_LIMITED, retryable.
     *
     * @generated from enum value: REDIS_DOWN_FAIL_CLOSED = 2;
     */
    FAIL_CLOSED = 2
}
/**
 * Describes the enum toolgate.v1.RedisDown.
 */
export declare const RedisDownSchema: GenEnum<RedisDown>;
/**
 * The admin plane: register, inspect and remove tools.
 *
 * @generated from service toolgate.v1.ToolRegistry
 */
export declare const ToolRegistry: GenService<{
    /**
     * Creates the tool, or replaces it and bumps its version.
     *
     * @generated from rpc toolgate.v1.ToolRegistry.RegisterTool
     */
    registerTool: {
        methodKind: "unary";
        input: typeof RegisterToolRequestSchema;
        output: typeof RegisterToolResponseSchema;
    };
    /**
     * @generated from rpc toolgate.v1.ToolRegistry.GetTool
     */
    getTool: {
        methodKind: "unary";
        input: typeof GetToolRequestSchema;
        output: typeof GetToolResponseSchema;
    };
    /**
     * @generated from rpc toolgate.v1.ToolRegistry.ListTools
     */
    listTools: {
        methodKind: "unary";
        input: typeof ListToolsRequestSchema;
        output: typeof ListToolsResponseSchema;
    };
    /**
     * @generated from rpc toolgate.v1.ToolRegistry.DeleteTool
     */
    deleteTool: {
        methodKind: "unary";
        input: typeof DeleteToolRequestSchema;
        output: typeof DeleteToolResponseSchema;
    };
}>;
