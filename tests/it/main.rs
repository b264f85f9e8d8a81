//! The integration tests, one binary (`cargo test --test it`): a module per suite, and `support`, what they share.
//!
//! One binary links the crate once, not once per suite. Its tests share one process, so a test that changes
//! process-wide state (the environment, the current directory, a global subscriber) or measures the whole process
//! (`support::alone`) must keep that from the others. Tests that need more than plain `cargo test` has are
//! `#[ignore]`d, and their module path says what they need: `cluster::` a Redis, `console_browser::` Chromium,
//! `helm::` helm (deploy/helm/test's), the others the Python MCP SDK's venvs. `.ci/run` sets all of that up, then
//! runs every ignored test in one `cargo test --test it -- --ignored` (CONTRIBUTING.md, "The ignored tests").

mod support;

mod cli;
mod cluster;
mod console;
mod console_browser;
mod console_operators;
mod console_review;
mod console_tools;
mod crash;
mod deploy;
mod execute_wire;
mod gateway;
mod grpc_backend;
mod hardening_inject;
mod hardening_registry;
mod hardening_repair;
mod hardening_schema;
mod hardening_validation;
mod helm;
mod idempotency;
mod inject;
mod json_repair_cases;
mod mcp;
mod mcp_admin;
mod mcp_front;
mod mcp_front_jwt;
mod mcp_front_python;
mod overload;
mod parallel_split;
mod policy;
mod policy_docs;
mod policy_rules;
mod policy_rules_ops;
mod registry;
mod repair;
mod repair_props;
mod review;
mod review_defer;
mod schema_suite;
mod split;
mod telemetry;
mod telemetry_metrics;
mod text_calls;
mod text_negatives;
mod tls;
mod tls_collector;
mod tls_doors;
mod tls_inbound;
mod tls_rotation;
mod unix_sockets;
mod wire_parity;
mod worker;
