//! gRPC on HTTP/2 where the gateway speaks it itself (its listener, `Execute`, and calls to gRPC tool servers):
//! the message framing (a flag byte and a 4-byte length before each message) and the `grpc-timeout` header.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::HeaderMap;
use prost::Message;
use std::time::Duration;

/// The caller's timeout, from `grpc-timeout` (`<up to 8 digits><unit>`, unit one of H M S m u n); `None` when
/// absent or malformed.
pub fn timeout(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

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
    fn grpc_timeouts_are_read_in_every_unit_and_nonsense_is_ignored() {
        let of = |text: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("grpc-timeout", text.parse().unwrap());
            timeout(&headers)
        };
        assert_eq!(of("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(of("3M"), Some(Duration::from_secs(180)));
        assert_eq!(of("4S"), Some(Duration::from_secs(4)));
        assert_eq!(of("250m"), Some(Duration::from_millis(250)));
        assert_eq!(of("7u"), Some(Duration::from_micros(7)));
        assert_eq!(of("99999999n"), Some(Duration::from_nanos(99_999_999)));
        for bad in ["", "S", "5", "5x", "-5S", "123456789S", "1.5S"] {
            assert_eq!(of(bad), None, "{bad:?}");
        }
        assert_eq!(timeout(&HeaderMap::new()), None);
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
