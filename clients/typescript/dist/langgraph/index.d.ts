/**
 * toolgate for LangGraph.js and LangChain v1: `GatewayToolNode` (a `ToolNode` that runs every call through the
 * gateway), `bindGatewayTools` and `gatewayTools` (the model bound to the gateway's definitions),
 * `toolgateMiddleware` for `createAgent`, and `textCallsMiddleware` and `textCallsHook`, which turn calls a model
 * wrote in its text into tool calls.
 * @module
 */
export { type BindsTools, bindGatewayTools, type ContextSource, contextFromConfig, gatewayTools } from "./binding.js";
export { toolgateMiddleware, type ToolgateMiddlewareOptions } from "./middleware.js";
export { type ErrorHook, GatewayToolNode, type GatewayToolNodeOptions, withCallIds } from "./node.js";
export { INTERRUPT_TYPE, RESUME_ACTIONS, STILL_PENDING } from "./review.js";
export { readTextCalls, TEXT_CALLS_KEY, textCallsHook, textCallsMiddleware, type TextCallsOptions, } from "./textcalls.js";
export { rewriteAiMessage, toLangChain } from "./transcript.js";
