//! The edge where protobuf stops: every conversion between the generated types (`pb`) and the crate's own, as
//! `From` and `TryFrom` impls, used by the gRPC door and the CLI alike. Nothing here decides anything; a field the
//! crate's type lacks is dropped, and a missing message field becomes its default.

mod call;
mod mcp_server;
mod spec;
mod worker;
