//! toolgate: a gRPC sidecar that resolves, validates and runs the tool calls of LLM agents.
//!
//! # Layout
//! From the edges inward (ARCHITECTURE.md holds the graph of what may use what, which `tests/tidy.rs` enforces):
//! - [`cli`], [`app`]: the commands (a gRPC client), and the composition root `toolgate serve` runs: it builds the
//!   shared core once and starts the doors.
//! - The doors, each given its own settings and [`handles::Core`], and none using another: [`grpc`] (the tonic
//!   services, with the one place errors become `tonic::Status`), [`mcp_front`] (MCP over Streamable HTTP) and
//!   [`console`] (the web console); [`pb_convert`]: the conversions between protobuf ([`pb`], generated) and the
//!   crate's types.
//! - [`config`], [`definitions`]: configuration, and tools rendered in provider formats.
//! - [`executor`]: one call end to end: pipeline, call-id record, admission, review, dispatch, answer.
//! - [`review`]: the human-review queue, on this gateway or in the cluster's Redis.
//! - [`idempotency`]: the call-id store, on this gateway or in the cluster's Redis.
//! - [`backend`]: where calls run: gRPC ToolRuntime, HTTP, MCP servers, and workers over `ToolWorker.Connect`.
//! - [`telemetry`]: the call's span and metrics, and their export.
//! - [`pipeline`]: the pure call path (resolve, parse, validate, repair, inject, answer); no I/O, shared with
//!   `toolgate repair`.
//! - [`registry`]: tool specs, their compiled schemas and the catalog snapshot.
//! - [`policy`]: rate limits, concurrency caps and session budgets, on plain parameters and an injectable clock.
//! - [`store`], [`cluster`], [`wire`], [`tls`]: infrastructure: the embedded database, the Redis connection, the
//!   hand-written HTTP/2 and protobuf paths and the sockets, and TLS material (loaded, reloaded, identities).

#![forbid(unsafe_code)]

pub mod app;
pub mod backend;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod console;
pub mod definitions;
pub mod executor;
pub mod grpc;
pub mod handles;
pub mod idempotency;
pub mod mcp_front;
pub mod pb;
pub mod pb_convert;
pub mod pipeline;
pub mod policy;
pub mod registry;
pub mod review;
pub mod store;
pub mod telemetry;
pub mod tls;
pub mod wire;

pub use app::{run, run_with_clock};
pub use config::Config;
