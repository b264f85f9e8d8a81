//! The gateway's hand-written HTTP/2 and protobuf: where it frames gRPC messages, reads gRPC statuses and encodes
//! protobuf itself instead of going through tonic's client and server stacks or prost's message structs.
//!
//! # Why it exists
//! Each piece replaced a general path on the per-call path, and is kept for the instructions per call it saves,
//! counted under callgrind for the whole process (agent client, gateway, tool server, OTLP sink; see
//! docs/performance.md):
//! - [`client`]: calls to gRPC tool servers on `h2` directly, not through a tonic `Channel` (no buffer task, tower
//!   stack or streaming codec per call): 332k to 304k instructions per call, throughput 38% to 44% of direct.
//! - [`listen`] and [`unary`]: `Execute` answered on hyper's HTTP/2 server by a path of its own, not through axum
//!   routing, tower layers and tonic's streaming codec: 304k to 293k.
//! - [`coalesce`]: the writes between two flushes in one `writev` (325k to 205k `writev` calls per run; 3 per
//!   gateway call instead of 5), and no flush put off (p50 from 2.47–2.52× to 1.98–2.0× direct). That, an OK
//!   answer's trailers read in [`client`] without building a `Status`, and two changes outside this module: 293k
//!   to 281k.
//! - [`otlp`]: span batches encoded straight from the SDK's `SpanData`, not converted into prost structs: 362k to
//!   333k.
//! - [`protobuf`]: the field writers `otlp` and the gRPC backend's `InvokeRequest` share; the request is written
//!   from the call's borrowed strings rather than copied into a prost struct first (six allocations a call).
//!
//! Of the 281k, the gateway's two HTTP/2 connections cost about 54k (31k serving the agent, 23k to the tool server).
//!
//! # What it must stay equal to
//! tonic and prost, wherever a peer could tell the difference:
//! - [`frame`]: tonic's codec's framing: a flag byte (0; a compressed message refused) and a 4-byte big-endian
//!   length before each message, a message over the limit refused from its prefix.
//! - [`status`]: `grpc-status` and `grpc-message` read as `tonic::Status::from_header_map` reads them (the same
//!   `Code`, the same percent-decoded message), an HTTP status without `grpc-status` mapped to the `Code` tonic's
//!   client infers, and `grpc-timeout` parsed as tonic's server parses it.
//! - [`client`]: an answer read to the `Code` and message tonic's client reports for it.
//! - [`unary`]: an OK answer as tonic's server writes it (`application/grpc`, the message, `grpc-status: 0` in
//!   the trailers); every other status is written by tonic's own `Status::into_http`.
//! - [`otlp`]: byte for byte what prost encodes from `opentelemetry-proto`'s `ExportTraceServiceRequest`.
//! - [`protobuf`]: what prost decodes as the message its writer stands for (the gRPC backend's tests).
//!
//! `tests.rs` reads each input through this module and through tonic, and `tests/it/wire_parity.rs` sends the same
//! answers to tonic's client and to [`client`]; where they differ on purpose, the tables say so and why.
//!
//! It also holds the gateway's sockets ([`socket`]: TCP or Unix, plain or TLS), the listener of the HTTP side doors
//! ([`side_listener`]: TLS handshakes off the accept loop, shared by the MCP front door and the console) and the
//! tonic channels opened by address ([`channel`]). Inside the crate this module uses only `pb` and `tls`; the doors,
//! `app`, `config`, `backend`, `telemetry` and `cli` use it.

pub mod channel;
pub mod client;
pub mod coalesce;
pub mod frame;
pub mod listen;
pub mod otlp;
pub mod protobuf;
pub mod side_listener;
pub mod socket;
pub mod status;
pub mod unary;

#[cfg(test)]
mod tests;
