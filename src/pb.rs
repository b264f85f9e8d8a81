//! The generated protobuf and gRPC types: the only `include_proto!`. Conversions to the crate's types are in `proto`.

#![allow(clippy::all, missing_docs)]

pub mod v1 {
    tonic::include_proto!("toolgate.v1");
}

/// The encoded descriptor set of `proto/toolgate/v1`, served by gRPC reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("toolgate_descriptor");
