//! Compiles `proto/toolgate/v1` with protox (no protoc needed) into OUT_DIR, plus a descriptor set for reflection.

use prost::Message;
use std::{env, fs, path::PathBuf};

const PROTOS: &[&str] = &[
    "toolgate/v1/types.proto",
    "toolgate/v1/registry.proto",
    "toolgate/v1/gateway.proto",
    "toolgate/v1/runtime.proto",
    "toolgate/v1/review.proto",
    "toolgate/v1/mcp.proto",
    "toolgate/v1/worker.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(PROTOS, ["proto"])?;
    let out = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(out.join("toolgate_descriptor.bin"), fds.encode_to_vec())?;
    // No transport constructors: every client is built on a Channel, and `ToolWorker.Connect` would clash with one.
    tonic_prost_build::configure().build_client(true).build_server(true).build_transport(false).compile_fds(fds)?;
    Ok(())
}
