/**
 * toolgate's TypeScript client: `Client` for the gateway's gRPC API, and the answers as plain typed values.
 * The LangGraph.js node and the LangChain agent middleware are in `toolgate/langgraph`.
 * @module
 */
export { Client, DEFAULT_TARGET, GatewayError, type BatchOptions, type CallOptions, type CallsFromTextOptions, type ClientOptions, type DecideOptions, type ExecuteOptions, type ScopeOptions, } from "./client.js";
export * from "./types.js";
