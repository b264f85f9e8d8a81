//! gRPC's message framing, where the gateway frames messages itself (its `Execute` path and its calls to gRPC tool
//! servers): a flag byte and a 4-byte big-endian length before each message, as tonic's codec writes and reads it.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::Message;

/// Bytes before each message: the compressed flag and the big-endian length.
pub const PREFIX: usize = 5;

/// Why a body is not one uncompressed message within the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("the message is {found} bytes, over the limit of {limit} bytes")]
    TooLarge { found: usize, limit: usize },
    #[error("the message is compressed, and no compression was agreed")]
    Compressed,
    #[error("the body is not one whole gRPC message")]
    Truncated,
    #[error("no message in the body")]
    Missing,
}

/// `message` with its prefix, ready to send as one DATA frame.
pub fn encode(message: &impl Message) -> Bytes {
    let len = message.encoded_len();
    let mut buf = BytesMut::with_capacity(PREFIX + len);
    buf.put_u8(0);
    buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    // Cannot fail: the buffer has room for the whole message.
    let _ = message.encode(&mut buf);
    buf.freeze()
}

/// The prefix's length of a body's first message, once its five bytes are in: refuses a compressed message or
/// one over `limit` as soon as its prefix arrives, before the rest is read.
fn check_prefix(head: &[u8], limit: usize) -> Result<Option<usize>, FrameError> {
    let Some(prefix) = head.get(..PREFIX) else { return Ok(None) };
    if prefix[0] != 0 {
        return Err(FrameError::Compressed);
    }
    let found = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
    if found > limit {
        return Err(FrameError::TooLarge { found, limit });
    }
    Ok(Some(found))
}

/// The one message a unary body holds, its prefix checked against `limit`.
fn message(mut body: Bytes, limit: usize) -> Result<Bytes, FrameError> {
    if body.is_empty() {
        return Err(FrameError::Missing);
    }
    let len = check_prefix(&body, limit)?.ok_or(FrameError::Truncated)?;
    if body.len() != PREFIX + len {
        return Err(FrameError::Truncated);
    }
    body.advance(PREFIX);
    Ok(body)
}

/// Gathers a body's DATA chunks. Holds the first chunk as it came when it is the whole body, as a unary message
/// of a few hundred bytes is: no copy.
#[derive(Debug)]
pub struct Gather {
    held: Held,
    limit: usize,
}

/// What a body has brought so far.
#[derive(Debug, Default)]
enum Held {
    #[default]
    Nothing,
    One(Bytes),
    Several(BytesMut),
}

impl Gather {
    /// A body whose one message may be at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self { held: Held::Nothing, limit }
    }

    /// Adds a chunk; fails as soon as the body cannot be one message within the limit.
    pub fn push(&mut self, chunk: Bytes) -> Result<(), FrameError> {
        self.held = match std::mem::take(&mut self.held) {
            Held::Nothing => Held::One(chunk),
            Held::One(first) => {
                let mut several = BytesMut::with_capacity(first.len() + chunk.len());
                several.extend_from_slice(&first);
                several.extend_from_slice(&chunk);
                Held::Several(several)
            }
            Held::Several(mut several) => {
                several.extend_from_slice(&chunk);
                Held::Several(several)
            }
        };
        let held: &[u8] = match &self.held {
            Held::Nothing => &[],
            Held::One(bytes) => bytes,
            Held::Several(bytes) => bytes,
        };
        check_prefix(held, self.limit)?;
        let found = held.len().saturating_sub(PREFIX);
        if found > self.limit {
            return Err(FrameError::TooLarge { found, limit: self.limit });
        }
        Ok(())
    }

    /// The one message the body held.
    pub fn finish(self) -> Result<Bytes, FrameError> {
        let body = match self.held {
            Held::Nothing => Bytes::new(),
            Held::One(bytes) => bytes,
            Held::Several(bytes) => bytes.freeze(),
        };
        message(body, self.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::v1::InvokeResponse;

    fn framed(text: &str) -> Bytes {
        encode(&InvokeResponse { content: text.into(), ..Default::default() })
    }

    #[test]
    fn a_message_round_trips_whole_or_in_chunks() {
        let body = framed(&"x".repeat(3000));
        let whole = message(body.clone(), 4000).unwrap();
        assert_eq!(InvokeResponse::decode(whole).unwrap().content.len(), 3000);
        for cut in [1, 3, 5, 6, 100, body.len() - 1] {
            let mut gather = Gather::new(4000);
            gather.push(body.slice(..cut)).unwrap();
            gather.push(body.slice(cut..)).unwrap();
            assert_eq!(gather.finish().unwrap(), body.slice(PREFIX..), "cut at {cut}");
        }
    }

    #[test]
    fn a_message_over_the_limit_is_refused_by_its_prefix_before_the_rest_arrives() {
        let body = framed(&"x".repeat(3000));
        let mut gather = Gather::new(1000);
        let refused = gather.push(body.slice(..PREFIX)).unwrap_err();
        assert!(matches!(refused, FrameError::TooLarge { limit: 1000, found } if found > 3000), "{refused:?}");
        assert!(matches!(message(body, 1000), Err(FrameError::TooLarge { .. })));
    }

    #[test]
    fn a_body_longer_than_its_prefix_says_is_refused_once_past_the_limit() {
        let mut lying = BytesMut::new();
        lying.put_u8(0);
        lying.put_u32(10);
        lying.extend_from_slice(&[b'x'; 64]);
        let mut gather = Gather::new(32);
        assert_eq!(gather.push(lying.freeze()), Err(FrameError::TooLarge { found: 64, limit: 32 }));
        let mut two = BytesMut::from(&framed("a")[..]);
        two.extend_from_slice(&framed("b"));
        assert_eq!(message(two.freeze(), 100), Err(FrameError::Truncated), "a unary body holds one message");
    }

    #[test]
    fn compressed_truncated_and_empty_bodies_are_refused() {
        let mut compressed = BytesMut::from(&framed("a")[..]);
        compressed[0] = 1;
        assert_eq!(message(compressed.freeze(), 100), Err(FrameError::Compressed));
        let body = framed("abc");
        assert_eq!(message(body.slice(..body.len() - 1), 100), Err(FrameError::Truncated));
        assert_eq!(message(body.slice(..3), 100), Err(FrameError::Truncated));
        assert_eq!(Gather::new(100).finish(), Err(FrameError::Missing));
    }
}
