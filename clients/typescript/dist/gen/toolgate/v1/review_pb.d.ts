import type { GenEnum, GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Repair } from "./types_pb.js";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file toolgate/v1/review.proto.
 */
export declare const file_toolgate_v1_review: GenFile;
/**
 * A call waiting for a person. `arguments` is what the model wrote (after repair), without injected values.
 *
 * @generated from message toolgate.v1.PendingReview
 */
export type PendingReview = Message<"toolgate.v1.PendingReview"> & {
    /**
     * @generated from field: string call_id = 1;
     */
    callId: string;
    /**
     * @generated from field: string tenant = 2;
     */
    tenant: string;
    /**
     * @generated from field: string session_id = 3;
     */
    sessionId: string;
    /**
     * @generated from field: string user_id = 4;
     */
    userId: string;
    /**
     * The registry name of the tool.
     *
     * @generated from field: string tool = 5;
     */
    tool: string;
    /**
     * @generated from field: string arguments = 6;
     */
    arguments: string;
    /**
     * @generated from field: repeated toolgate.v1.Repair repairs = 7;
     */
    repairs: Repair[];
    /**
     * Unix time in milliseconds.
     *
     * @generated from field: uint64 created_ms = 8;
     */
    createdMs: bigint;
    /**
     * Once decided: who decided (the reviewer's name as given to the console or in DecideRequest.reviewer; empty for a
     * decision over the API that named no one) and when, in Unix milliseconds (0 while pending).
     *
     * @generated from field: string decided_by = 9;
     */
    decidedBy: string;
    /**
     * @generated from field: uint64 decided_ms = 10;
     */
    decidedMs: bigint;
    /**
     * The policy rule that sent the call to review, and its message; empty for a tool whose review.required is set.
     *
     * @generated from field: string rule = 11;
     */
    rule: string;
    /**
     * @generated from field: string rule_message = 12;
     */
    ruleMessage: string;
};
/**
 * Describes the message toolgate.v1.PendingReview.
 * Use `create(PendingReviewSchema)` to create a new message.
 */
export declare const PendingReviewSchema: GenMessage<PendingReview>;
/**
 * @generated from message toolgate.v1.ListPendingRequest
 */
export type ListPendingRequest = Message<"toolgate.v1.ListPendingRequest"> & {
    /**
     * Only this tenant's calls; every tenant's when empty and all_tenants is set.
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
 * Describes the message toolgate.v1.ListPendingRequest.
 * Use `create(ListPendingRequestSchema)` to create a new message.
 */
export declare const ListPendingRequestSchema: GenMessage<ListPendingRequest>;
/**
 * @generated from message toolgate.v1.ListPendingResponse
 */
export type ListPendingResponse = Message<"toolgate.v1.ListPendingResponse"> & {
    /**
     * @generated from field: repeated toolgate.v1.PendingReview pending = 1;
     */
    pending: PendingReview[];
};
/**
 * Describes the message toolgate.v1.ListPendingResponse.
 * Use `create(ListPendingResponseSchema)` to create a new message.
 */
export declare const ListPendingResponseSchema: GenMessage<ListPendingResponse>;
/**
 * @generated from message toolgate.v1.DecideRequest
 */
export type DecideRequest = Message<"toolgate.v1.DecideRequest"> & {
    /**
     * @generated from field: string call_id = 1;
     */
    callId: string;
    /**
     * @generated from field: string tenant = 2;
     */
    tenant: string;
    /**
     * @generated from field: toolgate.v1.ReviewAction action = 3;
     */
    action: ReviewAction;
    /**
     * For EDIT: the new arguments as JSON text.
     *
     * @generated from field: string arguments = 4;
     */
    arguments: string;
    /**
     * For REJECT: what the model is told.
     *
     * @generated from field: string feedback = 5;
     */
    feedback: string;
    /**
     * Who decides, kept in the review record: one line of at most 64 characters (control characters dropped). Empty
     * records the decision as the API's.
     *
     * @generated from field: string reviewer = 6;
     */
    reviewer: string;
};
/**
 * Describes the message toolgate.v1.DecideRequest.
 * Use `create(DecideRequestSchema)` to create a new message.
 */
export declare const DecideRequestSchema: GenMessage<DecideRequest>;
/**
 * @generated from message toolgate.v1.DecideResponse
 */
export type DecideResponse = Message<"toolgate.v1.DecideResponse"> & {
    /**
     * @generated from field: toolgate.v1.PendingReview decided = 1;
     */
    decided?: PendingReview | undefined;
};
/**
 * Describes the message toolgate.v1.DecideResponse.
 * Use `create(DecideResponseSchema)` to create a new message.
 */
export declare const DecideResponseSchema: GenMessage<DecideResponse>;
/**
 * @generated from message toolgate.v1.WatchPendingRequest
 */
export type WatchPendingRequest = Message<"toolgate.v1.WatchPendingRequest"> & {
    /**
     * @generated from field: string tenant = 1;
     */
    tenant: string;
    /**
     * @generated from field: bool all_tenants = 2;
     */
    allTenants: boolean;
};
/**
 * Describes the message toolgate.v1.WatchPendingRequest.
 * Use `create(WatchPendingRequestSchema)` to create a new message.
 */
export declare const WatchPendingRequestSchema: GenMessage<WatchPendingRequest>;
/**
 * @generated from message toolgate.v1.ReviewEvent
 */
export type ReviewEvent = Message<"toolgate.v1.ReviewEvent"> & {
    /**
     * @generated from field: toolgate.v1.ReviewEvent.Kind kind = 1;
     */
    kind: ReviewEvent_Kind;
    /**
     * @generated from field: toolgate.v1.PendingReview review = 2;
     */
    review?: PendingReview | undefined;
};
/**
 * Describes the message toolgate.v1.ReviewEvent.
 * Use `create(ReviewEventSchema)` to create a new message.
 */
export declare const ReviewEventSchema: GenMessage<ReviewEvent>;
/**
 * @generated from enum toolgate.v1.ReviewEvent.Kind
 */
export declare enum ReviewEvent_Kind {
    /**
     * @generated from enum value: KIND_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * A call waits for a decision.
     *
     * @generated from enum value: KIND_PENDING = 1;
     */
    PENDING = 1,
    /**
     * A call was decided and no longer waits.
     *
     * @generated from enum value: KIND_DECIDED = 2;
     */
    DECIDED = 2
}
/**
 * Describes the enum toolgate.v1.ReviewEvent.Kind.
 */
export declare const ReviewEvent_KindSchema: GenEnum<ReviewEvent_Kind>;
/**
 * @generated from enum toolgate.v1.ReviewAction
 */
export declare enum ReviewAction {
    /**
     * @generated from enum value: REVIEW_ACTION_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * Run the call as the model wrote it.
     *
     * @generated from enum value: REVIEW_ACTION_APPROVE = 1;
     */
    APPROVE = 1,
    /**
     * Run it with `arguments` instead, validated against the tool's schema first.
     *
     * @generated from enum value: REVIEW_ACTION_EDIT = 2;
     */
    EDIT = 2,
    /**
     * Do not run it; the model gets `feedback` as the content of a REJECTED message.
     *
     * @generated from enum value: REVIEW_ACTION_REJECT = 3;
     */
    REJECT = 3
}
/**
 * Describes the enum toolgate.v1.ReviewAction.
 */
export declare const ReviewActionSchema: GenEnum<ReviewAction>;
/**
 * Human review of tool calls before they run: the admin plane for reviewers.
 *
 * @generated from service toolgate.v1.ToolReview
 */
export declare const ToolReview: GenService<{
    /**
     * Calls waiting for a decision, oldest first.
     *
     * @generated from rpc toolgate.v1.ToolReview.ListPending
     */
    listPending: {
        methodKind: "unary";
        input: typeof ListPendingRequestSchema;
        output: typeof ListPendingResponseSchema;
    };
    /**
     * Approves, edits or rejects one pending call. A call is decided once.
     *
     * @generated from rpc toolgate.v1.ToolReview.Decide
     */
    decide: {
        methodKind: "unary";
        input: typeof DecideRequestSchema;
        output: typeof DecideResponseSchema;
    };
    /**
     * Every pending call now, then each change as it happens.
     *
     * @generated from rpc toolgate.v1.ToolReview.WatchPending
     */
    watchPending: {
        methodKind: "server_streaming";
        input: typeof WatchPendingRequestSchema;
        output: typeof ReviewEventSchema;
    };
}>;
