//! toolgate: a gRPC sidecar that resolves, validates and runs the tool calls of LLM agents.
//!
//! # Layout
//! - [`pipeline`]: the pure call path (resolve, parse, validate, answer); no I/O, shared with `toolgate repair`.
//! - [`registry`]: tool specs, their compiled schemas, the catalog snapshot and the embedded store.
//! - [`executor`]: one call end to end: pipeline, dispatch with timeouts and retries, answer.
//! - [`backend`]: where calls run: gRPC ToolRuntime, HTTP, MCP servers, and workers over `ToolWorker.Connect`.
//! - [`policy`]: rate limits, concurrency caps and session budgets, on plain parameters and an injectable clock.
//! - [`server`]: the tonic services, and the one place errors become `tonic::Status`.
//! - [`definitions`], [`config`], [`cli`], [`pb`]: provider formats, configuration, commands, generated types.

#![forbid(unsafe_code)]

pub mod backend;
pub mod cli;
pub mod cluster;
pub mod coalesce;
pub mod config;
pub mod definitions;
pub mod executor;
pub mod grpc_wire;
pub mod pb;
pub mod pipeline;
pub mod policy;
pub mod registry;
pub mod server;
pub mod telemetry;

pub use config::Config;
pub use server::{run, run_with_clock};
