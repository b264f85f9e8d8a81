//! Protobuf's wire format written by hand, for the messages the gateway sends on every call: fields straight from
//! borrowed data, where prost's message structs would first copy every string into one of their own. Keys and
//! varints are prost's own (`prost::encoding`); empty and zero fields are left out, as proto3 encoders do, and each
//! message's encoder is held to prost's encoding by its tests.

use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};

/// A varint field (an integer, enum or bool), left out when zero.
pub fn uint(buf: &mut Vec<u8>, field: u32, value: u64) {
    if value != 0 {
        encode_key(field, WireType::Varint, buf);
        encode_varint(value, buf);
    }
}

/// A `fixed64` field, left out when zero.
pub fn fixed64(buf: &mut Vec<u8>, field: u32, value: u64) {
    if value != 0 {
        encode_key(field, WireType::SixtyFourBit, buf);
        buf.extend_from_slice(&value.to_le_bytes());
    }
}

/// A `fixed32` field, left out when zero.
pub fn fixed32(buf: &mut Vec<u8>, field: u32, value: u32) {
    if value != 0 {
        encode_key(field, WireType::ThirtyTwoBit, buf);
        buf.extend_from_slice(&value.to_le_bytes());
    }
}

/// A `bytes` field, left out when empty.
pub fn bytes(buf: &mut Vec<u8>, field: u32, value: &[u8]) {
    if !value.is_empty() {
        len_delimited(buf, field, value);
    }
}

/// A `string` field, left out when empty.
pub fn string(buf: &mut Vec<u8>, field: u32, value: &str) {
    bytes(buf, field, value.as_bytes());
}

/// A string or bytes field, written even when empty.
pub fn len_delimited(buf: &mut Vec<u8>, field: u32, value: &[u8]) {
    encode_key(field, WireType::LengthDelimited, buf);
    encode_varint(value.len() as u64, buf);
    buf.extend_from_slice(value);
}

/// A nested message, written by `write` after its length. The length is given one byte first; a message of
/// 128 bytes or more is moved up by the bytes its length needs beyond that.
pub fn nested(buf: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    encode_key(field, WireType::LengthDelimited, buf);
    let at = buf.len();
    buf.push(0);
    write(buf);
    let len = (buf.len() - at - 1) as u64;
    if len < 0x80 {
        buf[at] = len as u8;
        return;
    }
    let n = encoded_len_varint(len);
    let end = buf.len();
    buf.resize(end + n - 1, 0);
    buf.copy_within(at + 1..end, at + n);
    let mut slot = &mut buf[at..at + n];
    encode_varint(len, &mut slot);
}
